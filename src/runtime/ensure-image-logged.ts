// A component's image made present (container-image.ts ensureImage) with its pull told as it goes: to a progress
// callback at every event, to the log once a second while bytes flow and at every other status change. Apart from
// container-runtime.ts because how a pull is reported is its own concern, shared by install, prefetch and start.
import type { DesiredComponent } from '../core/desired-state.js';
import type { Engine } from './container-engine.js';
import { ensureImage } from './container-image.js';
import type { ContainerRuntimeOptions } from './container-runtime-options.js';

const PULL_LOG_EVERY_MS = 1000;

/** Where a pull is told (the runtime's options), and the clock that spaces the log lines. */
export type ImagePullLog = Pick<ContainerRuntimeOptions, 'onPullProgress' | 'log'>;

export async function ensureImageLogged(
  engine: Engine,
  c: DesiredComponent,
  policy: 'always' | 'if-not-present' | 'never',
  o: ImagePullLog,
  now: () => number,
  signal?: AbortSignal,
): Promise<void> {
  const image = c.recipe.lifecycle.run.container!.image;
  let lastLog = -Infinity;
  let lastStatus = '';
  const pulled = await ensureImage(engine.docker, image, policy, {
    component: c.name,
    signal,
    onProgress: (p) => {
      o.onPullProgress?.(c.name, p);
      // The log gets one line a second while bytes flow, and every other status change (per image, not per layer).
      const t = now();
      const downloading = p.status === 'Downloading' || p.status === 'Extracting';
      if (downloading ? t - lastLog < PULL_LOG_EVERY_MS : p.status === lastStatus) return;
      lastLog = t;
      lastStatus = p.status;
      o.log?.info(
        {
          component: c.name,
          image,
          status: p.status,
          ...(p.totalBytes > 0 && { mb: `${mb(p.currentBytes)}/${mb(p.totalBytes)}` }),
        },
        'pulling image',
      );
    },
  });
  if (pulled) o.log?.info({ component: c.name, image, policy }, 'image pulled');
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
