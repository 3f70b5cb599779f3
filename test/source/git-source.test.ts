// GitSource against a real Git smart-HTTP server (git http-backend) and real local repositories; commits are made
// and pushed with the git CLI (asynchronously: the server answers from this very process).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { OperationError } from '../../src/core/errors.js';
import type { Revision } from '../../src/source/directory-source.js';
import { GitSource } from '../../src/source/git-source.js';
import type { GitSourceOptions } from '../../src/source/git-source-options.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (...args: string[]) => (await run('git', args, { env: GIT_ENV })).stdout.trim();
const decode = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** Polls `pred` until it holds or the deadline passes (no sleeping to synchronise). */
async function until(pred: () => boolean, what: string, deadlineMs = 10_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A working repository whose commits are pushed to `target` (a bare repository path). */
class Workspace {
  private n = 0;
  constructor(
    readonly dir: string,
    readonly target: string,
  ) {}

  static async create(dir: string, target: string): Promise<Workspace> {
    await git('init', '--quiet', '--initial-branch=main', dir);
    return new Workspace(dir, target);
  }

  /** Writes `files` (or a fresh plans/plan.toml), commits, and returns the commit id. */
  async commit(files?: Record<string, string | Buffer>): Promise<string> {
    this.n++;
    for (const [path, content] of Object.entries(files ?? { 'plans/plan.toml': `# revision ${this.n}\n` })) {
      mkdirSync(dirname(join(this.dir, path)), { recursive: true });
      writeFileSync(join(this.dir, path), content);
    }
    await git('-C', this.dir, 'add', '-A');
    await git('-C', this.dir, 'commit', '--quiet', '--allow-empty', '-m', `commit ${this.n}`);
    return git('-C', this.dir, 'rev-parse', 'HEAD');
  }

  async push(force = false): Promise<void> {
    await git('-C', this.dir, 'push', '--quiet', ...(force ? ['--force'] : []), this.target, 'HEAD:refs/heads/main');
  }

  async commitAndPush(files?: Record<string, string | Buffer>): Promise<string> {
    const id = await this.commit(files);
    await this.push();
    return id;
  }
}

/** A GitSource with everything it reports recorded; `applied` plays the agent's last applied commit. */
class Recorder {
  readonly revisions: Revision[] = [];
  readonly rejections: Array<{ commit: string; code: string; reason: string }> = [];
  readonly errors: Array<Error & { code?: string }> = [];
  applied?: string;
  readonly source: GitSource;

  constructor(opts: Partial<GitSourceOptions> & Pick<GitSourceOptions, 'repo' | 'cacheDir'>) {
    let seed = 1;
    this.source = new GitSource({
      ref: 'main',
      pollMs: 3_600_000,
      random: () => (seed = (seed * 16807) % 2147483647) / 2147483647,
      allowHistoryRewrite: false,
      lastAppliedCommit: () => this.applied,
      onRevision: (r) => {
        this.revisions.push(r);
        this.applied = r.id; // the agent applies every offer at once
      },
      onRejected: (r) => this.rejections.push(r),
      onError: (e) => this.errors.push(e),
      ...opts,
    });
  }

  get last(): Revision | undefined {
    return this.revisions.at(-1);
  }
}

async function read(r: Revision | undefined, path = 'plans/plan.toml'): Promise<string> {
  if (!r) throw new Error('no revision');
  const res = await r.reader.readFile(path, 1 << 20);
  if (!res.ok) throw new Error(`${res.code}: ${res.message}`);
  return decode(res.bytes);
}

let root: string;
let server: GitHttpServer;
const sources: GitSource[] = [];

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-gitsrc-'));
  server = await startGitHttpServer({ root: join(root, 'server') });
});

afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

/** A repository on the server with one pushed commit, a workspace to push more, and a recorder following it. */
async function remoteFixture(opts: Partial<GitSourceOptions> = {}, name = 'fleet') {
  const bare = server.createRepository(name);
  const ws = await Workspace.create(join(root, `ws-${name}`), bare);
  const first = await ws.commitAndPush();
  const rec = follow({ repo: server.url(name), ...opts });
  return { bare, ws, first, rec };
}

function follow(opts: Partial<GitSourceOptions> & Pick<GitSourceOptions, 'repo'>): Recorder {
  const rec = new Recorder({ cacheDir: join(root, 'cache'), ...opts });
  sources.push(rec.source);
  return rec;
}

/** The requests the server saw during `fn`. */
async function served(fn: () => Promise<void>) {
  const from = server.requests.length;
  await fn();
  return server.requests.slice(from);
}

describe('GitSource over HTTP', () => {
  it('offers the tip at the first look, as a reader of the commit tree', async () => {
    const { ws, first, rec } = await remoteFixture();
    await ws.commit({ 'recipes/a.toml': 'name = "a"\n' }); // committed, not pushed: not offered
    await rec.source.start();
    expect(rec.errors).toEqual([]);
    expect(rec.revisions.map((r) => r.id)).toEqual([first]);
    expect(rec.last!.id).toMatch(/^[0-9a-f]{40}$/);
    expect(rec.last!.source).toBe(`git ${server.url('fleet')} main`);
    expect(await read(rec.last)).toBe('# revision 1\n');
    expect((await rec.last!.reader.readFile('recipes/a.toml', 1024)).ok).toBe(false);
  });

  it('makes a no-op poll with the ls-refs exchange alone, and fetches only when the branch moved', async () => {
    const { ws, rec } = await remoteFixture();
    await rec.source.start();
    const noop = await served(() => rec.source.syncNow());
    // The first look's discovery showed protocol v2: a poll is the ls-refs POST alone (git-ls-refs.ts), one request;
    // a fetch would speak protocol v1 (isomorphic-git).
    expect(noop.map((q) => `${q.method} ${q.path} ${q.protocol}`)).toEqual([
      'POST /fleet.git/git-upload-pack version=2',
    ]);
    expect(noop.reduce((n, q) => n + q.bytes, 0)).toBeLessThan(1000);
    expect(rec.revisions).toHaveLength(1);

    const second = await ws.commitAndPush({ 'plans/plan.toml': '# second\n' });
    const moved = await served(() => rec.source.syncNow());
    expect(moved.filter((q) => q.method === 'POST' && q.protocol === undefined)).toHaveLength(1); // the one fetch
    expect(rec.revisions.map((r) => r.id).at(-1)).toBe(second);
    expect(await read(rec.last)).toBe('# second\n');
    expect(rec.errors).toEqual([]);
  });

  // Regression (was a bug): fetches asked for thin packs, whose deltas may point into earlier packs; when content came
  // back (a revert) two packs held the same objects as deltas of each other and reading one looped forever.
  it('reads every commit back, also when content comes back (a revert) and after a deepening', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 100; i++)
      files[`recipes/r${i}.toml`] = `name = "r${i}"\n# ${randomBytes(48).toString('hex')}\n`;
    const { ws, rec } = await remoteFixture();
    await ws.commitAndPush(files);
    await rec.source.start();
    await ws.commitAndPush({ 'recipes/r7.toml': 'name = "r7"\nversion = 2\n' });
    await rec.source.syncNow();
    expect(await read(rec.last, 'recipes/r7.toml')).toBe('name = "r7"\nversion = 2\n');
    // The old content again, then several commits at once (the cache deepens to find the last one it had).
    await ws.commitAndPush({ 'recipes/r7.toml': files['recipes/r7.toml']! });
    await rec.source.syncNow();
    for (let n = 0; n < 5; n++)
      await ws.commitAndPush({ 'recipes/r7.toml': n % 2 ? files['recipes/r7.toml']! : 'name = "r7"\nversion = 2\n' });
    await rec.source.syncNow();
    expect(rec.errors).toEqual([]);
    expect(await read(rec.last, 'recipes/r7.toml')).toBe('name = "r7"\nversion = 2\n');
    for (let i = 0; i < 100; i += 9)
      if (i !== 7) expect(await read(rec.last, `recipes/r${i}.toml`)).toBe(files[`recipes/r${i}.toml`]);
  });

  it('collapses a burst of 20 pushes into one offer of the newest commit', async () => {
    const { ws, rec } = await remoteFixture();
    await rec.source.start();
    let newest = '';
    for (let i = 0; i < 20; i++) newest = await ws.commitAndPush({ 'plans/plan.toml': `# burst ${i}\n` });
    await rec.source.syncNow();
    expect(rec.revisions.map((r) => r.id)).toHaveLength(2);
    expect(rec.last!.id).toBe(newest);
    expect(rec.last!.origin).toBe('commit');
    expect(await read(rec.last)).toBe('# burst 19\n');
    expect(rec.errors).toEqual([]);
  });

  it('collapses concurrent syncNow calls into one look in flight and at most one follow-up', async () => {
    const { rec } = await remoteFixture();
    await rec.source.start();
    const looks = await served(() =>
      Promise.all(Array.from({ length: 10 }, () => rec.source.syncNow())).then(() => undefined),
    );
    const lsRefs = looks.filter((q) => q.method === 'POST' && q.protocol === 'version=2');
    expect(lsRefs.length).toBeGreaterThanOrEqual(1);
    expect(lsRefs.length).toBeLessThanOrEqual(2);
  });

  it('accepts a commit several pushes ahead of the last applied one, deepening the shallow cache to find it', async () => {
    const { ws, first, rec } = await remoteFixture();
    await rec.source.start();
    for (let i = 0; i < 5; i++) await ws.commitAndPush({ 'plans/plan.toml': `# ahead ${i}\n` });
    const reqs = await served(() => rec.source.syncNow());
    expect(rec.rejections).toEqual([]);
    // The depth-1 fetch, then at least one deepening: the tip's parent is not the last applied commit.
    expect(reqs.filter((q) => q.method === 'POST' && q.protocol === undefined).length).toBeGreaterThanOrEqual(2);
    expect(rec.revisions.map((r) => r.id)[0]).toBe(first);
    expect(await read(rec.last)).toBe('# ahead 4\n');
  });

  it('refuses a force-push to an older commit (KS_HISTORY_REWRITE), and offers it when history rewrites are allowed', async () => {
    const { ws, first, rec } = await remoteFixture();
    await rec.source.start();
    await ws.commitAndPush({ 'plans/plan.toml': '# second\n' });
    const third = await ws.commitAndPush({ 'plans/plan.toml': '# third\n' });
    await rec.source.syncNow();
    expect(rec.applied).toBe(third);

    await git('-C', ws.dir, 'reset', '--quiet', '--hard', first);
    await ws.push(true);
    await rec.source.syncNow();
    expect(rec.rejections).toEqual([
      { commit: first, code: 'KS_HISTORY_REWRITE', reason: expect.stringContaining(third.slice(0, 12)) },
    ]);
    expect(rec.revisions.at(-1)!.id).toBe(third); // nothing offered: the device keeps what it has
    // The refused tip is not refused again at every poll.
    await rec.source.syncNow();
    expect(rec.rejections).toHaveLength(1);

    const allowed = follow({ repo: server.url('fleet'), allowHistoryRewrite: true });
    allowed.applied = third;
    await allowed.source.start();
    expect(allowed.rejections).toEqual([]);
    expect(allowed.revisions.map((r) => r.id)).toEqual([first]);
    expect(await read(allowed.last)).toBe('# revision 1\n');
  });

  it('refuses a rewritten branch with unrelated history as a proven rewrite', async () => {
    const { first, rec } = await remoteFixture();
    await rec.source.start();
    const other = await Workspace.create(join(root, 'ws-other'), join(root, 'server', 'fleet.git'));
    await other.commit({ 'plans/plan.toml': '# orphan 1\n' });
    const orphan = await other.commit({ 'plans/plan.toml': '# orphan 2\n' });
    await other.push(true);
    await rec.source.syncNow();
    expect(rec.rejections.map((r) => [r.commit, r.code])).toEqual([[orphan, 'KS_HISTORY_REWRITE']]);
    expect(rec.applied).toBe(first);
  });

  it('refuses with KS_HISTORY_UNVERIFIED when the last applied commit lies beyond maxHistoryCommits', async () => {
    const { ws, rec } = await remoteFixture({ maxHistoryCommits: 4 });
    await rec.source.start();
    let tip = '';
    for (let i = 0; i < 8; i++) tip = await ws.commitAndPush({ 'plans/plan.toml': `# far ${i}\n` });
    await rec.source.syncNow();
    expect(rec.rejections).toEqual([
      { commit: tip, code: 'KS_HISTORY_UNVERIFIED', reason: expect.stringContaining('within 4 commits') },
    ]);
    expect(rec.revisions).toHaveLength(1);
  });

  it('reports a server that is down, keeps what it has, and catches up on the next look once it returns', async () => {
    const { ws, first, rec } = await remoteFixture();
    await rec.source.start();
    await server.stop();
    const second = await ws.commitAndPush({ 'plans/plan.toml': '# while down\n' }); // pushed to the repository on disk
    await rec.source.syncNow();
    expect(rec.errors.map((e) => e.code)).toEqual(['KS_GIT_UNREACHABLE']);
    expect(rec.source.status.failures).toBe(1);
    expect(rec.revisions.map((r) => r.id)).toEqual([first]);
    await server.start();
    await rec.source.syncNow();
    expect(rec.revisions.map((r) => r.id)).toEqual([first, second]);
    expect(rec.source.status.failures).toBe(0);
  });

  it('retries on its own with backoff while the server is down and catches up after it returns', async () => {
    const { ws, rec } = await remoteFixture({ pollMs: 400, retryBaseMs: 20 });
    await rec.source.start();
    await server.stop();
    await until(() => rec.errors.length >= 3, 'three failed looks');
    const back = await ws.commitAndPush({ 'plans/plan.toml': '# back\n' });
    await server.start();
    await until(() => rec.last?.id === back, 'the commit pushed during the outage');
    expect(new Set(rec.errors.map((e) => e.code))).toEqual(new Set(['KS_GIT_UNREACHABLE']));
  });

  it('gives up a fetch that takes longer than fetchTimeoutMs (KS_GIT_TIMEOUT)', async () => {
    const { rec } = await remoteFixture({ fetchTimeoutMs: 150 });
    server.delayMs = 3000;
    await rec.source.syncNow();
    expect(rec.errors.map((e) => e.code)).toEqual(['KS_GIT_TIMEOUT']);
    expect(rec.revisions).toEqual([]);
  });

  it('refuses a fetch over maxFetchBytes (KS_GIT_FETCH_TOO_LARGE) and offers nothing', async () => {
    const { ws, rec } = await remoteFixture({ maxFetchBytes: 16 * 1024 });
    await rec.source.start();
    expect(rec.revisions).toHaveLength(1);
    await ws.commitAndPush({ 'artifacts/blob.bin': randomBytes(64 * 1024) });
    await rec.source.syncNow();
    expect(rec.errors.map((e) => e.code)).toEqual(['KS_GIT_FETCH_TOO_LARGE']);
    expect(rec.errors[0]!.message).toContain(`${16 * 1024} bytes`);
    expect(rec.revisions).toHaveLength(1);
  });

  it('keeps the cache bounded over many commits by re-fetching into a fresh directory, keeping the previous one', async () => {
    const { ws, rec } = await remoteFixture({ maxCachePacks: 3 });
    await rec.source.start();
    const cacheRoot = dirname(rec.source.cacheGitdir!);
    const gitdirs = new Set<string>([rec.source.cacheGitdir!]);
    for (let i = 0; i < 12; i++) {
      await ws.commitAndPush({ 'plans/plan.toml': `# commit ${i}\n` });
      const before = rec.last!;
      const gitdirBefore = rec.source.cacheGitdir!;
      await rec.source.syncNow();
      expect(rec.errors).toEqual([]);
      expect(await read(rec.last)).toBe(`# commit ${i}\n`);
      gitdirs.add(rec.source.cacheGitdir!);
      // At most the current generation and the previous one; the previous one's readers still work.
      const gens = readdirSync(cacheRoot).sort();
      expect(gens.length).toBeLessThanOrEqual(2);
      if (rec.source.cacheGitdir !== gitdirBefore) {
        expect(existsSync(gitdirBefore)).toBe(true);
        expect(await read(before)).toBe(i === 0 ? '# revision 1\n' : `# commit ${i - 1}\n`);
      }
      const packs = readdirSync(join(rec.source.cacheGitdir!, 'objects', 'pack')).filter((f) => f.endsWith('.pack'));
      expect(packs.length).toBeLessThanOrEqual(3);
    }
    expect(gitdirs.size).toBeGreaterThanOrEqual(4); // it did swap, more than once
    expect(rec.revisions).toHaveLength(13);
  });

  it('reads back a commit that is only in the previous generation, also after a restart (the commit applied last)', async () => {
    const { ws, rec } = await remoteFixture({ maxCachePacks: 2 });
    await rec.source.start();
    let swapped: { applied: Revision; tip: Revision } | undefined;
    for (let i = 0; i < 6 && !swapped; i++) {
      await ws.commitAndPush({ 'plans/plan.toml': `# commit ${i}\n` });
      const before = rec.last!;
      const gitdirBefore = rec.source.cacheGitdir!;
      await rec.source.syncNow();
      if (rec.source.cacheGitdir !== gitdirBefore) swapped = { applied: before, tip: rec.last! };
    }
    if (!swapped) throw new Error('the cache never started a fresh generation');
    // The fresh generation holds the tip alone (depth 1): the commit before it is read from the previous one.
    const { applied } = swapped;
    const again = await rec.source.revisionAt(applied.id);
    expect(again?.id).toBe(applied.id);
    expect(again?.origin).toBe('commit');
    expect(await read(again)).toBe(await read(applied));
    await rec.source.close();
    const restarted = follow({ repo: server.url('fleet'), maxCachePacks: 2 });
    const back = await restarted.source.revisionAt(applied.id);
    expect(back?.id, 'after a restart, from the kept previous generation').toBe(applied.id);
    expect(await read(back)).toBe(await read(applied));
    await restarted.source.close();
  });

  it('reuses the cache after a restart: the tip it already holds is offered without a fetch', async () => {
    const { first, rec } = await remoteFixture();
    await rec.source.start();
    await rec.source.close();
    const again = follow({ repo: server.url('fleet') });
    const reqs = await served(() => again.source.start());
    expect(again.revisions.map((r) => r.id)).toEqual([first]);
    expect(reqs.every((q) => q.protocol === 'version=2')).toBe(true);
    expect(await read(again.last)).toBe('# revision 1\n');
  });

  it('a cache whose shallow boundary names a commit it lacks (a fetch cut short by a kill) is fetched afresh, not taken for a history it cannot verify', async () => {
    const { ws, first, rec } = await remoteFixture();
    await rec.source.start();
    await rec.source.close();
    const mid = await ws.commitAndPush({ 'plans/plan.toml': '# mid\n' });
    const tip = await ws.commitAndPush({ 'plans/plan.toml': '# tip\n' });
    // The `shallow` file says `mid` is here (as a boundary), and its objects are not: what a kill between the two
    // writes of a fetch leaves. A deepening then never brings `mid` (the server takes the client at its word).
    const shallow = execFileSync('find', [join(root, 'cache'), '-name', 'shallow', '-path', '*gen-*'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')[0]!;
    appendFileSync(shallow, `${mid}\n`);
    const again = follow({ repo: server.url('fleet'), lastAppliedCommit: () => first });
    await again.source.start();
    expect(again.rejections).toEqual([]);
    expect(again.errors.map((e) => e.code)).toEqual(['KS_GIT_FETCH_FAILED']);
    expect(again.errors[0]!.message).toMatch(/lacks .* fetching afresh/);
    // The next look fetches afresh, deepens, finds the commit applied last, and offers the tip.
    await again.source.syncNow();
    expect(again.rejections).toEqual([]);
    expect(again.revisions.map((r) => r.id)).toEqual([tip]);
  });

  it('reports a branch the remote does not have (KS_GIT_REF_NOT_FOUND)', async () => {
    const { rec } = await remoteFixture({ ref: 'production' });
    await rec.source.start();
    expect(rec.errors.map((e) => e.code)).toEqual(['KS_GIT_REF_NOT_FOUND']);
  });
});

describe('GitSource token auth', () => {
  const TOKEN = 'ks-T0ken-9f3a1c7e2b';

  it('reads with the right token; a wrong or missing one fails with KS_GIT_AUTH_FAILED; the token shows nowhere', async () => {
    server.token = TOKEN;
    const { first } = await remoteFixture({ token: TOKEN });
    const good = follow({ repo: server.url('fleet'), token: TOKEN, cacheDir: join(root, 'cache-good') });
    await good.source.start();
    expect(good.errors).toEqual([]);
    expect(good.revisions.map((r) => r.id)).toEqual([first]);

    const wrong = follow({ repo: server.url('fleet'), token: `${TOKEN}-wrong`, cacheDir: join(root, 'cache-wrong') });
    await wrong.source.start();
    const none = follow({ repo: server.url('fleet'), cacheDir: join(root, 'cache-none') });
    await none.source.start();
    expect(wrong.errors.map((e) => e.code)).toEqual(['KS_GIT_AUTH_FAILED']);
    expect(none.errors.map((e) => e.code)).toEqual(['KS_GIT_AUTH_FAILED']);
    expect(wrong.revisions).toEqual([]);

    const b64 = (s: string) => Buffer.from(`x-access-token:${s}`).toString('base64');
    const everything = JSON.stringify([
      [good, wrong, none].flatMap((r) => [
        r.source.label,
        r.source.status,
        ...r.errors.map((e) => [e.message, e.stack, e.code]),
      ]),
      good.revisions.map((r) => [r.id, r.source, r.reader.label]),
    ]);
    for (const secret of [TOKEN, b64(TOKEN), b64(`${TOKEN}-wrong`)]) expect(everything).not.toContain(secret);
  });

  it('refuses a URL that carries credentials, without repeating them', () => {
    let err: unknown;
    try {
      new GitSource({
        repo: `http://deploy:${TOKEN}@127.0.0.1:1/fleet.git`,
        ref: 'main',
        cacheDir: root,
        pollMs: 1000,
        random: Math.random,
        allowHistoryRewrite: false,
        lastAppliedCommit: () => undefined,
        onRevision: () => undefined,
        onRejected: () => undefined,
        onError: () => undefined,
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OperationError);
    expect((err as OperationError).code).toBe('KS_GIT_CREDENTIALS_IN_URL');
    expect((err as OperationError).message).toContain('http://127.0.0.1:1/fleet.git');
    expect((err as OperationError).message).not.toContain(TOKEN);
  });
});

describe('GitSource options', () => {
  const make = (over: Partial<GitSourceOptions>) => () =>
    new GitSource({
      repo: 'http://127.0.0.1:1/fleet.git',
      ref: 'main',
      cacheDir: root,
      pollMs: 1000,
      random: Math.random,
      allowHistoryRewrite: false,
      lastAppliedCommit: () => undefined,
      onRevision: () => undefined,
      onRejected: () => undefined,
      onError: () => undefined,
      ...over,
    });
  const codeOf = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as OperationError).code;
    }
    return 'no error';
  };

  it('refuses what it cannot follow, with a code', () => {
    expect(codeOf(make({}))).toBe('no error');
    expect(codeOf(make({ ref: 'refs/heads/release/2.x' }))).toBe('no error');
    expect(codeOf(make({ ref: 'refs/tags/v1' }))).toBe('KS_USAGE');
    expect(codeOf(make({ ref: 'main..evil' }))).toBe('KS_USAGE');
    expect(codeOf(make({ repo: 'git@example.com:fleet.git' }))).toBe('KS_GIT_BAD_URL');
    expect(codeOf(make({ repo: 'ssh://example.com/fleet.git' }))).toBe('KS_GIT_BAD_URL');
    expect(codeOf(make({ repo: 'https://example.com/fleet.git?access_token=x' }))).toBe('KS_GIT_BAD_URL');
    expect(codeOf(make({ token: 'abc\r\nX-Injected: 1' }))).toBe('KS_USAGE');
    expect(codeOf(make({ pollMs: 0 }))).toBe('KS_USAGE');
  });
});

describe('GitSource on a local repository', () => {
  for (const bare of [false, true]) {
    it(`follows a ${bare ? 'bare repository' : 'working tree'} in place: offers, skips no-ops, refuses rewrites`, async () => {
      const origin = join(root, 'local.git');
      await git('init', '--quiet', '--bare', '--initial-branch=main', origin);
      const ws = await Workspace.create(join(root, 'ws-local'), origin);
      const first = await ws.commitAndPush();
      const repo = bare ? origin : ws.dir;
      const cacheDir = join(root, 'unused-cache');
      const rec = follow({ repo, cacheDir });
      await rec.source.start();
      expect(rec.revisions.map((r) => r.id)).toEqual([first]);
      expect(rec.last!.source).toBe(`git ${repo} main`);
      expect(await read(rec.last)).toBe('# revision 1\n');

      await rec.source.syncNow();
      expect(rec.revisions).toHaveLength(1);

      const second = await ws.commitAndPush({ 'plans/plan.toml': '# local two\n' });
      await ws.commitAndPush({ 'plans/plan.toml': '# local three\n' });
      const third = await git('-C', ws.dir, 'rev-parse', 'HEAD');
      await rec.source.syncNow();
      expect(rec.revisions.map((r) => r.id)).toEqual([first, third]);
      expect(await read(rec.last)).toBe('# local three\n');

      await git('-C', ws.dir, 'reset', '--quiet', '--hard', second);
      const rewritten = await ws.commit({ 'plans/plan.toml': '# rewritten\n' });
      await ws.push(true);
      await rec.source.syncNow();
      expect(rec.rejections.map((r) => [r.commit, r.code])).toEqual([[rewritten, 'KS_HISTORY_REWRITE']]);
      expect(rec.errors).toEqual([]);
      expect(existsSync(cacheDir)).toBe(false); // read in place
    });
  }

  it('reports a path that is not a Git repository', async () => {
    const rec = follow({ repo: join(root, 'nothing-here') });
    await rec.source.start();
    expect(rec.errors.map((e) => e.code)).toEqual(['KS_NOT_A_GIT_REPOSITORY']);
  });
});
