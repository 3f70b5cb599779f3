// pushRefs against the real `git http-backend` (receive-pack run stateless, as smart HTTP does): several refs
// created, moved and deleted in one POST and no ref advertisement, a stale `old` refused for its ref alone, and
// only the objects the server lacks sent. Read back with the git CLI on the server's own repository.
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isStatusDeliveryError } from '../../src/report/commit-status.js';
import { pushRefs, receivePackRefs, ZERO_OID, type RefUpdate } from '../../src/report/receive-pack-push.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (cwd: string, ...args: string[]) => (await run('git', args, { cwd, env: GIT_ENV })).stdout.trim();
const TOKEN = 'push-secret-4242';
const AUTH = { authorization: `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}` };
/** One push with the token: the report per ref. */
const push = (url: string, gitdir: string, updates: RefUpdate[]) => pushRefs({ url, headers: AUTH, gitdir, updates });

let root: string;
let server: GitHttpServer;
const dirs: string[] = [];
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-rpush-srv-'));
  server = await startGitHttpServer({ root, token: TOKEN });
});
afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A local repository with three commits A ← B ← C, each changing one of several files; returns its .git and the ids. */
async function localHistory(): Promise<{ gitdir: string; a: string; b: string; c: string }> {
  const work = mkdtempSync(join(tmpdir(), 'keystone-rpush-work-'));
  dirs.push(work);
  await git(work, 'init', '--quiet', '--initial-branch=main');
  const ids: string[] = [];
  for (const [i, name] of ['a', 'b', 'c'].entries()) {
    for (let f = 0; f < 5; f++)
      writeFileSync(join(work, `file-${f}.txt`), f === i ? `changed by ${name}\n` : `file ${f}\n`);
    await git(work, 'add', '.');
    await git(work, 'commit', '--quiet', '-m', name);
    ids.push(await git(work, 'rev-parse', 'HEAD'));
  }
  const [a, b, c] = ids as [string, string, string];
  return { gitdir: join(work, '.git'), a, b, c };
}

function repo(name: string): { url: string; bare: string } {
  return { url: server.url(name), bare: server.createRepository(name) };
}

async function serverRefs(bare: string): Promise<Record<string, string>> {
  const out = await git(bare, 'for-each-ref', '--format=%(refname) %(objectname)');
  return Object.fromEntries(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ') as [string, string]),
  );
}

/** The server's requests to one repository from index `from` on, as `METHOD path?query`. */
function served(name: string, from: number): string[] {
  return server.requests
    .slice(from)
    .filter((r) => r.path.startsWith(`/${name}.git/`))
    .map((r) => `${r.method} ${r.path.slice(name.length + 6)}${r.query ? `?${r.query}` : ''} ${r.status}`);
}

describe('pushRefs', () => {
  it('creates, moves and deletes several refs in one POST, with no ref advertisement', async () => {
    const { url, bare } = repo('many');
    const { gitdir, a, b, c } = await localHistory();
    let from = server.requests.length;
    const created = await push(url, gitdir, [
      { ref: 'refs/keystone-test/one', old: ZERO_OID, new: a },
      { ref: 'refs/keystone-test/two', old: ZERO_OID, new: b },
      { ref: 'refs/notes/keystone-devices/dev-a', old: ZERO_OID, new: c },
    ]);
    expect(created.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
    expect(served('many', from)).toEqual(['POST git-receive-pack 200']);
    expect(await serverRefs(bare)).toEqual({
      'refs/keystone-test/one': a,
      'refs/keystone-test/two': b,
      'refs/notes/keystone-devices/dev-a': c,
    });
    await git(bare, 'fsck', '--connectivity-only', '--no-dangling'); // every object the refs need arrived

    from = server.requests.length;
    const moved = await push(url, gitdir, [
      { ref: 'refs/keystone-test/one', old: a, new: c },
      { ref: 'refs/keystone-test/two', old: b, new: ZERO_OID },
      { ref: 'refs/keystone-test/three', old: ZERO_OID, new: b },
    ]);
    expect(moved).toEqual([
      { ref: 'refs/keystone-test/one', status: 'ok' },
      { ref: 'refs/keystone-test/two', status: 'ok' },
      { ref: 'refs/keystone-test/three', status: 'ok' },
    ]);
    expect(served('many', from)).toEqual(['POST git-receive-pack 200']);
    expect(await serverRefs(bare)).toEqual({
      'refs/keystone-test/one': c,
      'refs/keystone-test/three': b,
      'refs/notes/keystone-devices/dev-a': c,
    });
  });

  it('sends only the objects the server lacks: a new commit on the old tip is the commit, its tree and the changed blob', async () => {
    const { url, bare } = repo('thin');
    const { gitdir, b, c } = await localHistory();
    const ref = 'refs/notes/keystone-devices/dev-a';
    expect(await push(url, gitdir, [{ ref, old: ZERO_OID, new: b }])).toEqual([{ ref, status: 'ok' }]);
    const before = Number(/^count: (\d+)$/m.exec(await git(bare, 'count-objects', '-v'))![1]);
    // The server unpacks a small pack into loose objects, so the count says how many came.
    expect(await push(url, gitdir, [{ ref, old: b, new: c }])).toEqual([{ ref, status: 'ok' }]);
    const after = Number(/^count: (\d+)$/m.exec(await git(bare, 'count-objects', '-v'))![1]);
    expect(after - before).toBe(3);
    await git(bare, 'fsck', '--connectivity-only', '--no-dangling');
  });

  it('moves a ref to an object the server has with an empty pack, and sends no pack for deletions alone', async () => {
    const { url, bare } = repo('empty-pack');
    const { gitdir, a, b } = await localHistory();
    await push(url, gitdir, [{ ref: 'refs/keystone-test/x', old: ZERO_OID, new: b }]);
    // A rename: the new ref points at what the old one did, so the server lacks nothing.
    const renamed = await push(url, gitdir, [
      { ref: 'refs/keystone-test/y', old: ZERO_OID, new: b },
      { ref: 'refs/keystone-test/x', old: b, new: ZERO_OID },
    ]);
    expect(renamed.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(await serverRefs(bare)).toEqual({ 'refs/keystone-test/y': b });
    const from = server.requests.length;
    expect(await push(url, gitdir, [{ ref: 'refs/keystone-test/y', old: b, new: ZERO_OID }])).toEqual([
      { ref: 'refs/keystone-test/y', status: 'ok' },
    ]);
    const [post] = server.requests.slice(from);
    expect(post!.received).toBeLessThan(200); // one command and a flush: no pack
    expect(await serverRefs(bare)).toEqual({});
    expect(a).not.toBe(b);
  });

  it('refuses, as stale and for that ref alone, an update whose old value is not what the server holds', async () => {
    const { url, bare } = repo('stale');
    const { gitdir, a, b, c } = await localHistory();
    await push(url, gitdir, [
      { ref: 'refs/keystone-test/moved', old: ZERO_OID, new: b },
      { ref: 'refs/keystone-test/present', old: ZERO_OID, new: a },
      { ref: 'refs/keystone-test/gone', old: ZERO_OID, new: a },
      { ref: 'refs/keystone-test/side', old: ZERO_OID, new: c },
    ]);
    await git(bare, 'update-ref', 'refs/keystone-test/moved', c); // someone else moved it
    await git(bare, 'update-ref', '-d', 'refs/keystone-test/gone');
    const updates: RefUpdate[] = [
      { ref: 'refs/keystone-test/moved', old: b, new: a }, // the server holds c
      { ref: 'refs/keystone-test/present', old: ZERO_OID, new: b }, // must not exist, does
      { ref: 'refs/keystone-test/gone', old: a, new: c }, // must exist, does not
      { ref: 'refs/keystone-test/fresh', old: ZERO_OID, new: c },
    ];
    const from = server.requests.length;
    const results = await push(url, gitdir, updates);
    expect(results.map((r) => [r.ref, r.status])).toEqual([
      ['refs/keystone-test/moved', 'stale'],
      ['refs/keystone-test/present', 'stale'],
      ['refs/keystone-test/gone', 'stale'],
      ['refs/keystone-test/fresh', 'ok'],
    ]);
    expect(results[0]).toMatchObject({ reason: expect.any(String) });
    expect(served('stale', from)).toEqual(['POST git-receive-pack 200']);
    expect(await serverRefs(bare)).toEqual({
      'refs/keystone-test/moved': c,
      'refs/keystone-test/present': a,
      'refs/keystone-test/fresh': c,
      'refs/keystone-test/side': c,
    });
  });

  it('refuses a deletion whose old value is stale and keeps the ref', async () => {
    const { url, bare } = repo('stale-delete');
    const { gitdir, a, b } = await localHistory();
    await push(url, gitdir, [{ ref: 'refs/keystone-test/d', old: ZERO_OID, new: b }]);
    const [r] = await push(url, gitdir, [{ ref: 'refs/keystone-test/d', old: a, new: ZERO_OID }]);
    expect(r).toMatchObject({ ref: 'refs/keystone-test/d', status: 'stale' });
    expect(await serverRefs(bare)).toEqual({ 'refs/keystone-test/d': b });
  });

  it('says rejected, not stale, when the server refuses the ref for what it is', async () => {
    const { url, bare } = repo('hook');
    const { gitdir, a } = await localHistory();
    writeFileSync(
      join(bare, 'hooks', 'update'),
      '#!/bin/sh\ncase "$1" in refs/keystone-test/forbidden) exit 1;; esac\nexit 0\n',
      { mode: 0o755 },
    );
    const results = await push(url, gitdir, [
      { ref: 'refs/keystone-test/forbidden', old: ZERO_OID, new: a },
      { ref: 'refs/keystone-test/allowed', old: ZERO_OID, new: a },
    ]);
    expect(results).toEqual([
      { ref: 'refs/keystone-test/forbidden', status: 'rejected', reason: 'hook declined' },
      { ref: 'refs/keystone-test/allowed', status: 'ok' },
    ]);
  });

  it('fails with a coded error when the server has receive-pack off, or refuses the token', async () => {
    const { url, bare } = repo('off');
    const { gitdir, a } = await localHistory();
    await git(bare, 'config', 'http.receivepack', 'false');
    const updates = [{ ref: 'refs/keystone-test/x', old: ZERO_OID, new: a }];
    const off = await push(url, gitdir, updates).catch((e: unknown) => e);
    expect(isStatusDeliveryError(off, 'KS_STATUS_AUTH')).toBe(true);
    expect((off as { data: { httpStatus?: number } }).data.httpStatus).toBe(403);

    const badToken = await pushRefs({ url, headers: { authorization: 'Basic eDp3cm9uZw==' }, gitdir, updates }).catch(
      (e: unknown) => e,
    );
    expect(isStatusDeliveryError(badToken, 'KS_STATUS_AUTH')).toBe(true);
    expect((badToken as { data: { httpStatus?: number } }).data.httpStatus).toBe(401);
    expect(await serverRefs(bare)).toEqual({});
  });

  it('fails retryably when the server is down or the signal aborts, and refuses updates that are no push', async () => {
    const { url } = repo('down');
    const { gitdir, a } = await localHistory();
    const updates = [{ ref: 'refs/keystone-test/x', old: ZERO_OID, new: a }];
    const cancelled = await pushRefs({ url, headers: AUTH, gitdir, updates, signal: AbortSignal.abort() }).catch(
      (e: unknown) => e,
    );
    expect(isStatusDeliveryError(cancelled, 'KS_STATUS_UNREACHABLE')).toBe(true);

    await server.stop();
    try {
      const down = await push(url, gitdir, updates).catch((e: unknown) => e);
      expect(isStatusDeliveryError(down, 'KS_STATUS_UNREACHABLE')).toBe(true);
      expect((down as { retryable: boolean }).retryable).toBe(true);
    } finally {
      await server.start();
    }

    for (const bad of [
      [{ ref: 'refs/x', old: ZERO_OID, new: ZERO_OID }],
      [{ ref: 'HEAD', old: ZERO_OID, new: a }],
      [{ ref: 'refs/x', old: 'abc', new: a }],
      [
        { ref: 'refs/x', old: ZERO_OID, new: a },
        { ref: 'refs/x', old: a, new: ZERO_OID },
      ],
    ])
      expect(
        isStatusDeliveryError(
          await pushRefs({ url, headers: AUTH, gitdir, updates: bad }).catch((e: unknown) => e),
          'KS_STATUS_INVALID',
        ),
      ).toBe(true);
  });
});

describe('pushRefs through a redirect', () => {
  let redirector: Server;
  let to = '';
  beforeAll(async () => {
    redirector = createServer((req, res) => res.writeHead(308, { location: `${to}${req.url}` }).end());
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => redirector.close(() => resolve())));
  const via = () => `http://127.0.0.1:${(redirector.address() as { port: number }).port}`;

  it('follows it with the same POST (a renamed repository), and never takes the credentials to another host', async () => {
    const open = await startGitHttpServer({ root: join(root, 'open') });
    try {
      const bare = open.createRepository('moved');
      const { gitdir, a } = await localHistory();
      to = `http://127.0.0.1:${open.port}`;
      const updates = [{ ref: 'refs/keystone-test/x', old: ZERO_OID, new: a }];
      expect(await pushRefs({ url: `${via()}/moved.git`, headers: AUTH, gitdir, updates })).toEqual([
        { ref: 'refs/keystone-test/x', status: 'ok' },
      ]);
      expect(open.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
        'POST /moved.git/git-receive-pack 200',
      ]);
      expect(await serverRefs(bare)).toEqual({ 'refs/keystone-test/x': a });

      // The server that wants the token is on another port: the token does not follow the redirect.
      repo('guarded');
      to = `http://127.0.0.1:${server.port}`;
      const err = await pushRefs({ url: `${via()}/guarded.git`, headers: AUTH, gitdir, updates }).catch(
        (e: unknown) => e,
      );
      expect(isStatusDeliveryError(err, 'KS_STATUS_AUTH')).toBe(true);
    } finally {
      await open.stop();
    }
  });
});

describe('receivePackRefs', () => {
  it("lists the server's refs that the filter wants, in one GET", async () => {
    const { url } = repo('adverts');
    const { gitdir, a, b } = await localHistory();
    expect(await receivePackRefs({ url, headers: AUTH })).toEqual(new Map()); // an empty repository
    await push(url, gitdir, [
      { ref: 'refs/keystone-test/one', old: ZERO_OID, new: a },
      { ref: 'refs/keystone-test/two', old: ZERO_OID, new: b },
      { ref: 'refs/heads/main', old: ZERO_OID, new: b },
    ]);
    const from = server.requests.length;
    const refs = await receivePackRefs({ url, headers: AUTH, wanted: (r) => r.startsWith('refs/keystone-test/') });
    expect(refs).toEqual(
      new Map([
        ['refs/keystone-test/one', a],
        ['refs/keystone-test/two', b],
      ]),
    );
    expect(served('adverts', from)).toEqual(['GET info/refs?service=git-receive-pack 200']);
  });
});
