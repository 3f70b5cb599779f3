// What a revision downloads before anything of it stops (SPEC §19): the artifacts of every component it (re)starts,
// into the artifact cache (verified by digest there, so the install finds them), and for a revision held for its
// maintenance window the container images too. A revision whose downloads do not fit the disk is refused here,
// naming what it needs and what is free; any other download problem is left to the apply, which reports it as before.
import type { DesiredComponent } from '../core/desired-state.js';
import type { Logger } from '../log/logger.js';

export interface PrefetchDeps {
  /** Fetches `c`'s artifacts into the cache (a cached one is not fetched again); their bytes. */
  fetchArtifacts: (c: DesiredComponent) => Promise<number>;
  /** Pulls `c`'s image as its pull_policy allows (containers only). */
  pullImage?: (c: DesiredComponent) => Promise<void>;
  /** Bytes free for the agent where the artifacts are cached and installed (the state directory's file system). */
  freeBytes: () => Promise<number>;
  /** Where that is, for the message. */
  where: string;
  log: Logger;
}

export type Prefetched = { ok: true; bytes: number } | { ok: false; reason: string };

const MiB = 1024 * 1024;
const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

/** Downloads what `components` need; `images` also pulls container images. Refuses only for disk space. */
export async function prefetch(
  components: readonly DesiredComponent[],
  o: { images: boolean; revision: string },
  d: PrefetchDeps,
): Promise<Prefetched> {
  let bytes = 0;
  for (const c of components) {
    try {
      if (c.recipe.artifacts.length) bytes += await d.fetchArtifacts(c);
      if (o.images && c.recipe.lifecycle.run.type === 'container') await d.pullImage?.(c);
    } catch (e) {
      if (isNoSpace(e)) {
        const free = await d.freeBytes().catch(() => undefined);
        return {
          ok: false,
          reason: `KS_DISK_SPACE: this revision's downloads do not fit on the disk: ${c.name}'s ${c.recipe.artifacts.length ? 'artifacts' : 'image'} ran out of space in ${d.where}${free === undefined ? '' : ` (${mib(free)} free)`}, after ${mib(bytes)} of other artifacts; nothing was stopped: free some space and keystonectl sync`,
        };
      }
      d.log.warn(
        { revision: o.revision, component: c.name, err: (e as Error).message },
        'could not download ahead of the apply; the apply tries again',
      );
    }
  }
  // Installing copies each artifact into its component's work directory (an archive unpacks to at least its size).
  const free = await d.freeBytes().catch(() => undefined);
  if (free !== undefined && bytes > free)
    return {
      ok: false,
      reason: `KS_DISK_SPACE: this revision needs at least ${mib(bytes)} in ${d.where} to install its artifacts into ${components.filter((c) => c.recipe.artifacts.length).length} component(s), and ${mib(free)} are free; nothing was stopped: free some space and keystonectl sync`,
    };
  return { ok: true, bytes };
}

function isNoSpace(e: unknown): boolean {
  for (let x: unknown = e; x; x = (x as { cause?: unknown }).cause) {
    if (
      (x as NodeJS.ErrnoException).code === 'ENOSPC' ||
      /ENOSPC|no space left on device/i.test(String((x as Error).message))
    )
      return true;
  }
  return false;
}
