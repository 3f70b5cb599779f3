// A look asks for one branch (ls-refs with its name as prefix, about 100 bytes back), at every poll. It reads the
// answer only as far as the branch (exact-ref-answer.ts): a flood of refs after it (a server ignoring the prefix, or
// 80,000 branches sharing it) is never received. A flood before it (a listing out of order) is cut off at the cap of
// a listing, 8 MiB, not at the 128 MiB of a fetch: on the first look after a start (the discovery, then
// isomorphic-git's ls-refs) and on every later one (the ls-refs POST alone). It used to read 128 MiB into memory at
// every poll, and later to fail every look past 8 MiB of refs after the branch (issue 28, finding 11).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GitSource } from '../../src/source/git-source.js';
import { startFaultyGitProxy, type FaultyGitProxy } from '../support/faulty-git-proxy.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

let root: string;
let server: GitHttpServer;
let proxy: FaultyGitProxy;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-look-cap-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  proxy = await startFaultyGitProxy(server.port);
});

afterAll(async () => {
  await proxy?.stop();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

it(
  'a flood of refs before the branch in answer to a look is refused at 8 MiB (KS_GIT_FETCH_TOO_LARGE), first look or later, and the source recovers',
  { timeout: 60_000 },
  async () => {
    server.createRepository('fleet');
    const work = join(root, 'work');
    await gitIn(root, ['init', '--quiet', '--initial-branch=main', work]);
    await gitIn(work, ['commit', '--quiet', '--allow-empty', '-m', 'one']);
    await gitIn(work, ['push', '--quiet', server.url('fleet'), 'HEAD:refs/heads/main']);
    const errors: Array<{ code?: string; message: string }> = [];
    const offered: string[] = [];
    const source = new GitSource({
      repo: proxy.url('fleet'),
      ref: 'main',
      cacheDir: join(root, 'cache'),
      pollMs: 3_600_000,
      random: () => 0.5,
      lastAppliedCommit: () => undefined,
      allowHistoryRewrite: false,
      onRevision: (r) => offered.push(r.id),
      onRejected: (r) => errors.push({ code: r.code, message: r.reason }),
      onError: (e) => errors.push({ code: e.code, message: e.message }),
    });
    try {
      // 3,000,000 refs: 190 MB if it were read whole.
      proxy.fault = { kind: 'huge-advertisement', refs: 3_000_000, on: 'ls-refs', first: true };
      await source.syncNow(); // the first look: the discovery, then ls-refs
      proxy.fault = { kind: 'none' };
      await source.syncNow(); // learns that the server speaks v2: later looks are the POST alone
      expect(offered).toHaveLength(1);
      proxy.fault = { kind: 'huge-advertisement', refs: 3_000_000, on: 'ls-refs', first: true };
      await source.syncNow();
      proxy.fault = { kind: 'none' };
      await source.syncNow();

      expect(errors.map((e) => e.code)).toEqual(['KS_GIT_FETCH_TOO_LARGE', 'KS_GIT_FETCH_TOO_LARGE']);
      expect(errors[0]!.message).toContain('8388608 bytes');
      const flooded = proxy.met({ fault: 'huge-advertisement' });
      expect(flooded).toHaveLength(2);
      // What the proxy got to send before the source hung up: the cap, and what the sockets buffered beyond it.
      for (const r of flooded) expect(r.bytes).toBeLessThan(40 * 1024 * 1024);
      expect(source.status.failures).toBe(0);
    } finally {
      await source.close();
    }
  },
);

it(
  'a flood of refs after the branch is never received: every look sees the branch, first look or later',
  { timeout: 60_000 },
  async () => {
    server.createRepository('after');
    const work = join(root, 'work-after');
    await gitIn(root, ['init', '--quiet', '--initial-branch=main', work]);
    await gitIn(work, ['commit', '--quiet', '--allow-empty', '-m', 'one']);
    await gitIn(work, ['push', '--quiet', server.url('after'), 'HEAD:refs/heads/main']);
    const errors: Array<{ code?: string; message: string }> = [];
    const offered: string[] = [];
    const source = new GitSource({
      repo: proxy.url('after'),
      ref: 'main',
      cacheDir: join(root, 'cache-after'),
      pollMs: 3_600_000,
      random: () => 0.5,
      lastAppliedCommit: () => undefined,
      allowHistoryRewrite: false,
      onRevision: (r) => offered.push(r.id),
      onRejected: (r) => errors.push({ code: r.code, message: r.reason }),
      onError: (e) => errors.push({ code: e.code, message: e.message }),
    });
    try {
      const from = proxy.requests.length;
      proxy.fault = { kind: 'huge-advertisement', refs: 3_000_000, on: 'ls-refs' };
      await source.syncNow(); // the discovery, then ls-refs
      await gitIn(work, ['commit', '--quiet', '--allow-empty', '-m', 'two']);
      await gitIn(work, ['push', '--quiet', server.url('after'), 'HEAD:refs/heads/main']);
      await source.syncNow(); // the ls-refs POST alone
      proxy.fault = { kind: 'none' };
      expect(errors).toEqual([]);
      expect(offered).toHaveLength(2);
      const flooded = proxy.requests.slice(from).filter((r) => r.fault === 'huge-advertisement');
      expect(flooded).toHaveLength(2);
      // Left at the branch's line: what the sockets buffered before the source hung up, far below the cap.
      for (const r of flooded) expect(r.bytes).toBeLessThan(8 * 1024 * 1024);
    } finally {
      await source.close();
    }
  },
);
