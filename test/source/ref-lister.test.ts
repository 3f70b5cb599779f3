// refListerFor: a remote read with the ls-refs POST alone (falling back once, and remembering, when a server refuses
// it), against the real smart-HTTP server; a local repository read from its own files, checked against what the
// same repository answers over HTTP.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GitServerBusyError } from '../../src/git/git-ls-refs.js';
import { refListerFor } from '../../src/source/ref-lister.js';
import { codedFailure } from '../support/coded-failure.js';
import { servedDuring, startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (...args: string[]) => (await run('git', args, { env: GIT_ENV })).stdout.trim();

let root: string;
let server: GitHttpServer;
let bare: string;
let ws: string;
let c1: string;
let c2: string;
let c3: string;
let tag: string;
const W1 = 'refs/keystone-rollout/w1/';

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-ref-lister-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  bare = server.createRepository('fleet');
  ws = join(root, 'ws');
  await git('init', '--quiet', '--initial-branch=main', ws);
  for (const m of ['one', 'two', 'three']) await git('-C', ws, 'commit', '--quiet', '--allow-empty', '-m', m);
  [c1, c2, c3] = (await git('-C', ws, 'rev-list', '--reverse', 'HEAD')).split('\n') as [string, string, string];
  await git('-C', ws, 'tag', '-a', '-m', 'release', 'v1', c1);
  tag = await git('-C', ws, 'rev-parse', 'v1');
  await git(
    '-C',
    ws,
    'push',
    '--quiet',
    bare,
    'main:refs/heads/main',
    `${c2}:refs/heads/main-old`,
    'refs/tags/v1:refs/tags/v1',
  );

  // Packed refs: written, then packed (`git pack-refs` removes their loose files).
  await git('-C', bare, 'update-ref', `${W1}0/dev-a/${c1}-success`, c1);
  await git('-C', bare, 'update-ref', `${W1}0/dev-b/${c1}-success`, c1);
  await git('-C', bare, 'update-ref', `${W1}7/dev-gone/${c1}-success`, c1);
  await git('-C', bare, 'pack-refs', '--all');
  // Loose refs after it: a new one, a packed one moved (the loose one wins), a packed one deleted.
  await git('-C', bare, 'update-ref', `${W1}f/dev-c/${c2}-pending`, c2);
  await git('-C', bare, 'update-ref', `${W1}0/dev-b/${c1}-success`, c3);
  await git('-C', bare, 'update-ref', '-d', `${W1}7/dev-gone/${c1}-success`);
  await git('-C', bare, 'update-ref', 'refs/keystone-rollout/w2/3/dev-d/x', c1);
  // A symbolic ref is listed as what it points at (ls-refs without `symrefs`); a dangling one is not listed.
  await git('-C', bare, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/main');
  await git('-C', bare, 'symbolic-ref', 'refs/heads/dangling', 'refs/heads/nothing');
});

afterEach(() => {
  server.cannedAnswers.length = 0;
  server.token = undefined;
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

const served = <T>(fn: () => Promise<T>) => servedDuring(server, fn);

const failure = codedFailure;

const EXPECTED = () => [
  { ref: 'refs/heads/alias', oid: c3 },
  { ref: 'refs/heads/main', oid: c3 },
  { ref: 'refs/heads/main-old', oid: c2 },
  { ref: `${W1}0/dev-a/${c1}-success`, oid: c1 },
  { ref: `${W1}0/dev-b/${c1}-success`, oid: c3 },
  { ref: `${W1}f/dev-c/${c2}-pending`, oid: c2 },
  { ref: 'refs/tags/v1', oid: tag },
];
const PREFIXES = ['refs/heads/', W1, 'refs/tags/'];

describe('refListerFor, a remote', () => {
  it('lists with one POST a call: refs under the prefixes, the server time, requests and bytes', async () => {
    const lister = refListerFor(server.url('fleet'));
    for (let i = 0; i < 2; i++) {
      const before = Date.now();
      const { value, reqs } = await served(() => lister.list(PREFIXES));
      expect(reqs.map((q) => `${q.method} ${q.protocol} ${q.status}`)).toEqual(['POST version=2 200']);
      expect(value).toEqual({
        refs: EXPECTED(),
        serverTime: expect.any(Number),
        requests: 1,
        bytes: reqs[0]!.received + reqs[0]!.bytes,
      });
      expect(value.serverTime).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(value.serverTime).toBeLessThanOrEqual(Date.now());
    }
  });

  it('asks nothing for no prefixes', async () => {
    const { value, reqs } = await served(() => refListerFor(server.url('fleet')).list([]));
    expect(value).toEqual({ refs: [], requests: 0, bytes: 0 });
    expect(reqs).toEqual([]);
  });

  it('a server without v2 (a proxy drops Git-Protocol): one discovery fallback, then the v1 advertisement alone', async () => {
    const proxy = await headerDroppingProxy(server.port);
    try {
      const lister = refListerFor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}/fleet.git`);
      const first = await served(() => lister.list(PREFIXES));
      expect(first.reqs.map((q) => q.method)).toEqual(['POST', 'GET']);
      expect(first.value.refs).toEqual(EXPECTED());
      expect(first.value.requests).toBe(2);
      expect(first.value.serverTime).toBeDefined();
      const next = await served(() => lister.list(['refs/heads/main']));
      expect(next.reqs.map((q) => q.method)).toEqual(['GET']);
      expect(next.value.refs.map((r) => r.ref)).toEqual(['refs/heads/main', 'refs/heads/main-old']);
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('a v2 server refusing the POST alone: the discovery, then the POST; later calls do both at once', async () => {
    const lister = refListerFor(server.url('fleet'));
    server.cannedAnswers.push({ status: 400, when: (q) => q.method === 'POST' });
    const first = await served(() => lister.list([W1]));
    expect(first.reqs.map((q) => `${q.method} ${q.status}`)).toEqual(['POST 400', 'GET 200', 'POST 200']);
    expect(first.value.requests).toBe(3);
    expect(first.value.refs).toHaveLength(3);
    const next = await served(() => lister.list([W1]));
    expect(next.reqs.map((q) => q.method)).toEqual(['GET', 'POST']);
    expect(next.value.refs).toEqual(first.value.refs);
  });

  it('auth, busy and a missing repository come coded, with no fallback where it could not help', async () => {
    server.token = 'tok-9';
    expect((await refListerFor(server.url('fleet'), { token: 'tok-9' }).list(['refs/heads/main'])).refs[0]!.oid).toBe(
      c3,
    );
    const wrong = await served(() =>
      failure(refListerFor(server.url('fleet'), { token: 'nope' }).list(['refs/heads/'])),
    );
    expect(wrong.value).toMatchObject({ code: 'KS_GIT_AUTH_FAILED' });
    expect(wrong.reqs).toHaveLength(1);
    server.token = undefined;

    server.cannedAnswers.push({ status: 429, headers: { 'retry-after': '30' } });
    const busy = await served(() => failure(refListerFor(server.url('fleet')).list(['refs/heads/'])));
    expect(busy.value).toBeInstanceOf(GitServerBusyError);
    expect(busy.value).toMatchObject({ code: 'KS_GIT_SERVER_BUSY', retryAfter: '30' });
    expect(busy.reqs).toHaveLength(1);

    const missing = await failure(refListerFor(server.url('nowhere')).list(['refs/heads/']));
    expect(missing).toMatchObject({ code: 'KS_GIT_REPO_NOT_FOUND' });
  });

  it('refuses a URL with credentials and a token it cannot send', () => {
    expect(() => refListerFor('https://u:secret@example.invalid/x.git')).toThrow(
      expect.objectContaining({ code: 'KS_GIT_CREDENTIALS_IN_URL' }),
    );
    expect(() => refListerFor('https://example.invalid/x.git', { token: 'a b' })).toThrow(
      expect.objectContaining({ code: 'KS_USAGE' }),
    );
  });
});

describe('refListerFor, a local repository', () => {
  it('reads loose and packed refs like the server lists them, with the local clock and no requests', async () => {
    const local = await refListerFor(bare, { now: () => 1_234 }).list(PREFIXES);
    expect(local).toEqual({ refs: EXPECTED(), serverTime: 1_234, requests: 0, bytes: 0 });
    // The same repository over HTTP, for several prefix shapes (a prefix is a string prefix, not a directory).
    const remote = refListerFor(server.url('fleet'));
    for (const prefixes of [
      PREFIXES,
      ['refs/heads/ma'],
      ['refs/heads/main'],
      [`${W1}0/`, 'refs/keystone-rollout/w2/'],
      ['refs/'],
      ['refs/nothing/'],
      ['r'],
    ])
      expect((await refListerFor(bare).list(prefixes)).refs).toEqual((await remote.list(prefixes)).refs);
  });

  it('reads a work tree, a linked work tree (.git is a file) and a file:// URL', async () => {
    const linked = join(root, 'linked');
    await git('-C', ws, 'worktree', 'add', '--quiet', '-b', 'side', linked, c1);
    await git('-C', ws, 'pack-refs', '--all');
    const want = [
      { ref: 'refs/heads/main', oid: c3 },
      { ref: 'refs/heads/side', oid: c1 },
    ];
    expect((await refListerFor(ws).list(['refs/heads/'])).refs).toEqual(want);
    expect((await refListerFor(linked).list(['refs/heads/'])).refs).toEqual(want);
    expect((await refListerFor(pathToFileURL(ws).href).list(['refs/heads/'])).refs).toEqual(want);
  });

  it('not a repository: KS_NOT_A_GIT_REPOSITORY', async () => {
    await expect(refListerFor(join(root, 'none')).list(['refs/'])).rejects.toMatchObject({
      code: 'KS_NOT_A_GIT_REPOSITORY',
    });
  });
});

/** An HTTP proxy to the Git server that drops the Git-Protocol header, as some proxies do: git then speaks v0. */
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
