// Junk refs INSIDE the very subtrees a rollout gate reads (issue 28, finding 11, after its first fix): anyone who can
// push reports (every device holds that credential) can add 80,000 names that are no rollout ref under
// `<wave>/failed/<held commit>/` or under a bucket `<wave>/a3/`. Each used to pass the listing's 8 MiB cap, so every
// read of the gate failed (KS_GIT_FETCH_TOO_LARGE) and the held commit was held for good. Now refs that do not parse
// as rollout refs are dropped as the answer streams; the real reports among them are still read. Against a real
// `git http-backend`, the junk written straight into the bare repository's packed-refs (pushing it would take minutes).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolloutGate, type RolloutRecall } from '../../src/agent/rollout-gate.js';
import { rolloutOf } from '../../src/core/rollout.js';
import { refListerFor } from '../../src/source/ref-lister.js';
import { BUCKETS, bucketOf, failuresPrefix, rolloutRef } from '../../src/report/rollout-refs.js';
import { codedFailure } from '../support/coded-failure.js';
import { GIT_ENV } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

const run = promisify(execFile);
/** Git's empty tree, which every repository has without writing it. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const JUNK = 80_000;
const HELD = 'c'.repeat(40);
const CAP = 8 * 1024 * 1024;
const rollout = rolloutOf({
  waves: [
    { name: 'canary', selector: { ring: 'canary' } },
    { name: 'rest', percent: 100 },
  ],
  bake: '0s',
  min_success: 1,
  abort_failure_percent: 0,
});
const candidate = [
  { commit: HELD, rollout, wave: 1, state: { planFile: 'plans/a.toml', components: [], layers: [], startOrder: [] } },
];
const store: RolloutRecall = {
  firstSuccessSeen: () => undefined,
  recordFirstSuccess: () => undefined,
  goodState: () => undefined,
};
// A device in bucket a3, where the bucket's junk is.
const inA3 = Array.from({ length: 5000 }, (_, i) => `dev-${i}`).find((d) => bucketOf(d) === 'a3')!;
const pad = 'x'.repeat(24);
const failedJunk = Array.from(
  { length: JUNK },
  (_, i) => `${failuresPrefix('canary', HELD)}junk-${String(i).padStart(6, '0')}-${pad}-not-a-state`,
);
const bucketJunk = Array.from(
  { length: JUNK },
  (_, i) => `refs/keystone-rollout/canary/a3/junkdevice/junk-${String(i).padStart(6, '0')}-${pad}-not-a-state`,
);

let root: string;
let server: GitHttpServer;

/** A bare repository on the server whose packed-refs hold `names` (sorted, as `git pack-refs` writes), at one commit. */
async function repoWith(name: string, names: string[]): Promise<void> {
  const bare = server.createRepository(name);
  const commit = (
    await run('git', ['-C', bare, 'commit-tree', EMPTY_TREE, '-m', 'reports'], { env: GIT_ENV })
  ).stdout.trim();
  const sorted = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  writeFileSync(
    join(bare, 'packed-refs'),
    `# pack-refs with: peeled fully-peeled sorted \n${sorted.map((n) => `${commit} ${n}\n`).join('')}`,
  );
}

const listingBytes = (names: string[]) => names.reduce((n, r) => n + 4 + 41 + r.length + 1, 0);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-gate-junk-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  // One canary failure of the held commit among the junk of its failures' subtree.
  await repoWith('failed', [
    rolloutRef({ wave: 'canary', device: 'k1', commit: HELD, state: 'failure' }),
    ...failedJunk,
  ]);
  // One canary success in bucket a3 among that bucket's junk.
  await repoWith('bucket', [
    rolloutRef({ wave: 'canary', device: inA3, commit: HELD, state: 'success' }),
    ...bucketJunk,
  ]);
  expect(listingBytes(failedJunk)).toBeGreaterThan(CAP);
  expect(listingBytes(bucketJunk)).toBeGreaterThan(CAP);
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('junk refs inside the subtrees a rollout gate reads', { timeout: 30_000 }, () => {
  it("80,000 under the held commit's failures: the read goes through, and the real failure halts the commit", async () => {
    const gate = new RolloutGate({ refs: refListerFor(server.url('failed')), store, now: () => 0, random: () => 0 });
    const r = await gate.decide(candidate);
    if ('error' in r) throw r.error;
    expect(r.refs).toBe(1);
    expect(r.decisions.get(HELD)?.kind).toBe('halted');
  });

  it('80,000 under the one bucket sampled: the read goes through, and the real success in it is read', async () => {
    // The first read of a wave samples one bucket, from random(): a3's.
    const gate = new RolloutGate({
      refs: refListerFor(server.url('bucket')),
      store,
      now: () => 0,
      random: () => BUCKETS.indexOf('a3') / 256 + 1e-6,
    });
    const r = await gate.decide(candidate);
    if ('error' in r) throw r.error;
    expect(r.refs).toBe(1);
  });

  it('a server without protocol v2: the v1 advertisement (every ref of the repository) is filtered the same way', async () => {
    const proxy = await headerDroppingProxy(server.port);
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/failed.git`;
      const r = await new RolloutGate({ refs: refListerFor(url), store, now: () => 0, random: () => 0 }).decide(
        candidate,
      );
      if ('error' in r) throw r.error;
      expect(r.refs).toBe(1);
      expect(r.decisions.get(HELD)?.kind).toBe('halted');
    } finally {
      proxy.closeAllConnections();
      await new Promise((done) => proxy.close(done));
    }
  });

  it('what is kept is still capped: keeping every ref, the same listing passes 8 MiB and is refused', async () => {
    const lister = refListerFor(server.url('failed'));
    const kept = await codedFailure(lister.list([failuresPrefix('canary', HELD)], { keep: () => true }));
    expect([kept.code, kept.message]).toEqual(['KS_GIT_FETCH_TOO_LARGE', expect.stringContaining('kept more than')]);
    expect((await codedFailure(lister.list([failuresPrefix('canary', HELD)]))).code).toBe('KS_GIT_FETCH_TOO_LARGE');
  });
});

/** A proxy that drops `Git-Protocol`, so that the server answers in protocol v1 (a proxy in the way does that). */
async function headerDroppingProxy(port: number): Promise<Server> {
  const proxy = createServer((req, res) => {
    const headers = { ...req.headers };
    delete headers['git-protocol'];
    const up = request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return proxy;
}
