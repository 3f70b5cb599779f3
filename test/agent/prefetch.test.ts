// Downloads ahead of an apply (SPEC §19), with the disk's answers given: a revision whose artifacts do not fit is
// refused naming what it needs and what is free; running out of space mid-download likewise; any other download
// problem is left to the apply; images are pulled only when asked (a revision held for its window).
import { describe, expect, it } from 'vitest';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { createLogger } from '../../src/log/logger.js';
import { prefetch, type PrefetchDeps } from '../../src/agent/prefetch.js';

const MiB = 1024 * 1024;
const comp = (name: string, o: { artifacts?: number; container?: boolean } = {}) =>
  ({
    name,
    recipe: {
      artifacts: Array.from({ length: o.artifacts ?? 0 }, (_, i) => ({ uri: `a${i}`, sha256: 'x' })),
      lifecycle: { run: { type: o.container ? 'container' : 'process' } },
    },
  }) as unknown as DesiredComponent;

function deps(o: {
  bytes?: Record<string, number | Error>;
  free?: number;
  pulled?: string[];
}): PrefetchDeps & { warned: string[] } {
  const warned: string[] = [];
  return {
    fetchArtifacts: async (c) => {
      const b = o.bytes?.[c.name] ?? 0;
      if (b instanceof Error) throw b;
      return b;
    },
    pullImage: async (c) => void o.pulled?.push(c.name),
    freeBytes: async () => o.free ?? 100 * MiB,
    where: '/var/lib/keystone',
    log: createLogger({ pretty: false, write: (l) => warned.push(JSON.parse(l).msg) }),
    warned,
  };
}

describe('prefetch', () => {
  it('downloads every artifact and says how much; images only when asked', async () => {
    const pulled: string[] = [];
    const cs = [comp('api', { artifacts: 2 }), comp('web', { container: true })];
    expect(await prefetch(cs, { images: false, revision: 'r' }, deps({ bytes: { api: 3 * MiB }, pulled }))).toEqual({
      ok: true,
      bytes: 3 * MiB,
    });
    expect(pulled).toEqual([]);
    expect(await prefetch(cs, { images: true, revision: 'r' }, deps({ bytes: { api: 3 * MiB }, pulled }))).toEqual({
      ok: true,
      bytes: 3 * MiB,
    });
    expect(pulled).toEqual(['web']);
  });

  it('refuses what does not fit once installed: what it needs and what is free', async () => {
    const r = await prefetch(
      [comp('api', { artifacts: 1 }), comp('db', { artifacts: 1 })],
      { images: false, revision: 'r' },
      deps({ bytes: { api: 3 * MiB, db: 2 * MiB }, free: 4 * MiB }),
    );
    expect(r).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^KS_DISK_SPACE: this revision needs at least 5\.0 MiB in \/var\/lib\/keystone to install its artifacts into 2 component\(s\), and 4\.0 MiB are free; nothing was stopped/,
      ),
    });
  });

  it('refuses when a download runs out of space, however the error wraps ENOSPC', async () => {
    const nospc = Object.assign(new Error('write failed'), {
      cause: Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
    });
    const r = await prefetch(
      [comp('api', { artifacts: 1 })],
      { images: false, revision: 'r' },
      deps({ bytes: { api: nospc }, free: 1024 }),
    );
    expect(r).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^KS_DISK_SPACE: this revision's downloads do not fit on the disk: api's artifacts ran out of space in \/var\/lib\/keystone \(0\.0 MiB free\)/,
      ),
    });
  });

  it('leaves any other download problem to the apply (which reports it as before), and goes on with the rest', async () => {
    const d = deps({ bytes: { api: new Error('KS_ARTIFACT_DIGEST_MISMATCH'), db: MiB } });
    expect(
      await prefetch(
        [comp('api', { artifacts: 1 }), comp('db', { artifacts: 1 })],
        { images: false, revision: 'r' },
        d,
      ),
    ).toEqual({ ok: true, bytes: MiB });
    expect(d.warned).toContain('could not download ahead of the apply; the apply tries again');
  });
});
