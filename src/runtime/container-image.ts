// The image of a container component, per its pull_policy: checked, or pulled with progress for people and logs.
import type Docker from 'dockerode';
import { ContainerError, engineMessage, engineStatus } from './container-error.js';

export type PullPolicy = 'always' | 'if-not-present' | 'never';

/** One progress event of a pull, as the engine reports it (per layer), plus running totals over every layer seen. */
export interface PullProgress {
  image: string;
  /** `Pulling fs layer`, `Downloading`, `Pull complete`, `Status: Downloaded newer image for …` */
  status: string;
  /** The layer, when the event is about one. */
  layer?: string;
  /** Bytes downloaded and expected over the layers seen so far (downloads only). */
  currentBytes: number;
  totalBytes: number;
}

export interface EnsureImageOptions {
  component: string;
  signal?: AbortSignal;
  onProgress?: (p: PullProgress) => void;
}

/** True when the engine has `image` locally. */
export async function hasImage(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (e) {
    if (engineStatus(e) === 404) return false;
    throw e;
  }
}

/**
 * Makes `image` present per `policy`: `never` only checks (KS_IMAGE_MISSING), `if-not-present` pulls when it is
 * missing, `always` pulls every time (and fails, as `docker run --pull=always` does, when the registry cannot be
 * reached). Returns whether it pulled. Throws KS_IMAGE_MISSING, KS_IMAGE_PULL_FAILED or KS_INSTALL_ABORTED.
 */
export async function ensureImage(
  docker: Docker,
  image: string,
  policy: PullPolicy,
  opts: EnsureImageOptions,
): Promise<boolean> {
  if (policy !== 'always' && (await hasImage(docker, image))) return false;
  if (policy === 'never')
    throw new ContainerError(
      'KS_IMAGE_MISSING',
      `image ${image} of ${opts.component} is not on this device and its pull_policy is "never"`,
      {
        component: opts.component,
        image,
      },
    );
  await pullImage(docker, image, opts);
  return true;
}

/** Pulls `image`, reporting each progress event; the engine's own error lines (in a 200 stream) are failures too. */
export async function pullImage(docker: Docker, image: string, opts: EnsureImageOptions): Promise<void> {
  const failed = (why: string, cause?: unknown) =>
    opts.signal?.aborted
      ? new ContainerError('KS_INSTALL_ABORTED', `pull of ${image} for ${opts.component} was aborted`, {
          component: opts.component,
          image,
        })
      : new ContainerError(
          'KS_IMAGE_PULL_FAILED',
          `cannot pull image ${image} for ${opts.component}: ${why}`,
          { component: opts.component, image },
          { cause },
        );
  let stream: NodeJS.ReadableStream;
  try {
    stream = (await docker.pull(image, { abortSignal: opts.signal })) as NodeJS.ReadableStream;
  } catch (e) {
    throw failed(engineMessage(e), e);
  }
  const layers = new Map<string, { current: number; total: number }>();
  let rest = '';
  let engineError: string | undefined;
  const onLine = (line: string) => {
    if (!line.trim()) return;
    let ev: {
      status?: string;
      id?: string;
      error?: string;
      errorDetail?: { message?: string };
      progressDetail?: { current?: number; total?: number };
    };
    try {
      ev = JSON.parse(line) as typeof ev;
    } catch {
      return;
    }
    if (ev.error || ev.errorDetail?.message) {
      engineError ??= ev.errorDetail?.message ?? ev.error;
      return;
    }
    if (ev.id && ev.progressDetail?.total && ev.status === 'Downloading')
      layers.set(ev.id, { current: ev.progressDetail.current ?? 0, total: ev.progressDetail.total });
    if (ev.id && ev.status === 'Download complete') {
      const l = layers.get(ev.id);
      if (l) l.current = l.total;
    }
    let currentBytes = 0;
    let totalBytes = 0;
    for (const l of layers.values()) {
      currentBytes += l.current;
      totalBytes += l.total;
    }
    opts.onProgress?.({ image, status: ev.status ?? '', ...(ev.id && { layer: ev.id }), currentBytes, totalBytes });
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer | string>) {
      rest += chunk.toString();
      const lines = rest.split('\n');
      rest = lines.pop() ?? '';
      lines.forEach(onLine);
    }
    onLine(rest);
  } catch (e) {
    throw failed(engineMessage(e), e);
  }
  if (engineError !== undefined) throw failed(engineError);
}
