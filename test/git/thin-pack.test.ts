// Thin packs: completed against the local store before they are stored (src/git/thin-pack.ts), asked for by the
// remote cache's fetches (thin-pack-http.ts). The packs come from the git CLI and a real `git http-backend` server.
import { spawn } from 'node:child_process';
import fs, { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OperationError } from '../../src/core/errors.js';
import { GitRemoteCache } from '../../src/git/git-remote-cache.js';
import { completeThinPack, type BaseObject } from '../../src/git/thin-pack.js';
import { requestable, withCapabilities } from '../../src/git/thin-pack-http.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

/** Runs git (asynchronously: the server answers from this process) with `input` on stdin: exit code and stdout. */
function gitRun(args: string[], input?: Uint8Array): Promise<{ code: number; out: Buffer; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { env: GIT_ENV, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout!.on('data', (d: Buffer) => out.push(d));
    child.stderr!.on('data', (d: Buffer) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out: Buffer.concat(out), err }));
    // A git that exits before reading all its input (it found the pack bad) is an answer, not an error.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}
async function gitOk(...args: string[]): Promise<string> {
  const r = await gitRun(args);
  if (r.code !== 0) throw new Error(`git ${args.join(' ')}: ${r.err}`);
  return r.out.toString().trim();
}

/** Rejects once `ms` have passed: a read that loops shows as a failure, not as a test that never ends. */
function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  );
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

/** A text of `n` numbered lines, line `changed` reading differently: deltas between two such texts are small. */
const text = (n: number, changed = -1, mark = 'x') =>
  Array.from(
    { length: n },
    (_, i) => `line ${i}${i === changed ? ` ${mark}` : ''} of a file long enough to delta`,
  ).join('\n') + '\n';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'keystone-thin-pack-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Whether `pack` indexes on its own in an empty repository (no --fix-thin): a pack that names no base outside itself. */
async function standsAlone(pack: Uint8Array): Promise<{ ok: boolean; err: string }> {
  const empty = mkdtempSync(join(root, 'empty-'));
  await gitOk('init', '--quiet', '--bare', empty);
  const r = await gitRun(['-C', empty, 'index-pack', '--stdin'], pack);
  return { ok: r.code === 0, err: r.err };
}

/** A base reader over a repository through the git CLI, counting its reads. */
function cliBases(repo: string) {
  const reads: string[] = [];
  const read = async (oid: string): Promise<BaseObject | undefined> => {
    reads.push(oid);
    const t = await gitRun(['-C', repo, 'cat-file', '-t', oid]);
    if (t.code !== 0) return undefined;
    const type = t.out.toString().trim() as BaseObject['type'];
    return { type, object: (await gitRun(['-C', repo, 'cat-file', type, oid])).out };
  };
  return { read, reads };
}

describe('completeThinPack', () => {
  it('adds the bases a thin pack names from outside as whole objects: the pack then indexes alone, with the same objects', async () => {
    const w = mkdtempSync(join(root, 'w-'));
    await gitOk('init', '--quiet', '--initial-branch=main', w);
    fs.writeFileSync(join(w, 'a.txt'), text(200));
    await gitOk('-C', w, 'add', '-A');
    await gitOk('-C', w, 'commit', '--quiet', '-m', 'one');
    const one = await gitOk('-C', w, 'rev-parse', 'HEAD');
    fs.writeFileSync(join(w, 'a.txt'), text(200, 100));
    await gitOk('-C', w, 'commit', '--quiet', '-am', 'two');
    const two = await gitOk('-C', w, 'rev-parse', 'HEAD');
    const thin = (
      await gitRun(
        ['-C', w, 'pack-objects', '--thin', '--stdout', '--revs', '--quiet'],
        Buffer.from(`${two}\n^${one}\n`),
      )
    ).out;
    // The control: as git sent it, the pack needs the old blob and tree from elsewhere.
    expect((await standsAlone(thin)).ok).toBe(false);

    const bases = cliBases(w);
    const fat = await completeThinPack(thin, bases.read);
    expect(await standsAlone(fat)).toEqual({ ok: true, err: '' });
    expect(new Set(bases.reads).size).toBe(bases.reads.length); // each base read once
    // Everything the thin pack held is in the completed one, and the new blob reads back whole.
    const empty = mkdtempSync(join(root, 'check-'));
    await gitOk('init', '--quiet', '--bare', empty);
    await gitRun(['-C', empty, 'index-pack', '--stdin'], fat);
    expect((await gitRun(['-C', empty, 'cat-file', 'blob', `${two}:a.txt`])).out.toString()).toBe(text(200, 100));
  });

  it('leaves a pack with no base from outside as it was', async () => {
    const w = mkdtempSync(join(root, 'w-'));
    await gitOk('init', '--quiet', '--initial-branch=main', w);
    fs.writeFileSync(join(w, 'a.txt'), text(50));
    await gitOk('-C', w, 'add', '-A');
    await gitOk('-C', w, 'commit', '--quiet', '-m', 'one');
    const full = (await gitRun(['-C', w, 'pack-objects', '--stdout', '--revs', '--quiet'], Buffer.from('HEAD\n'))).out;
    const bases = cliBases(w);
    expect(await completeThinPack(full, bases.read)).toBe(full);
    expect(bases.reads).toEqual([]);
  });

  /** A pack of ref-deltas, each naming the next one's id as its base and the last the first's: a ring. */
  function ringPack(n: number): { pack: Buffer; oids: string[] } {
    const oids = Array.from({ length: n }, (_, i) => createHash('sha1').update(`ring ${i}`).digest('hex'));
    const delta = Buffer.from([5, 5, 0x05, ...Buffer.from('hello')]); // base of 5 bytes, result of 5: insert "hello"
    const entries = oids.map((_, i) => {
      const z = deflateSync(delta);
      return Buffer.concat([Buffer.from([(7 << 4) | delta.length]), Buffer.from(oids[(i + 1) % n]!, 'hex'), z]);
    });
    const head = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1');
    head.writeUInt32BE(n, 8);
    const body = Buffer.concat([head, ...entries]);
    return { pack: Buffer.concat([body, createHash('sha1').update(body).digest()]), oids };
  }

  it('refuses deltas that never resolve (a ring of bases no store has) with KS_GIT_THIN_PACK, at once', async () => {
    const { pack, oids } = ringPack(3);
    const reads: string[] = [];
    const err = (await withDeadline(
      completeThinPack(pack, async (oid) => (reads.push(oid), undefined)).catch((e: unknown) => e),
      2_000,
      'a ring of deltas',
    )) as OperationError;
    expect(err.code).toBe('KS_GIT_THIN_PACK');
    expect(reads.sort()).toEqual([...oids].sort()); // each id asked of the store once, then refused
  });

  it('refuses a base the store answers with another object (the ids the stored pack names must be true)', async () => {
    const { pack } = ringPack(4);
    const reads: string[] = [];
    const read = async (oid: string): Promise<BaseObject> => (
      reads.push(oid),
      { type: 'blob', object: Buffer.from('hello') }
    );
    await expect(withDeadline(completeThinPack(pack, read), 2_000, 'a ring of deltas')).rejects.toMatchObject({
      code: 'KS_GIT_THIN_PACK',
    });
    expect(reads.length).toBe(1);
  });

  it('refuses a malformed pack (an ofs-delta pointing at itself, a truncated pack) with KS_GIT_THIN_PACK', async () => {
    const selfRef = Buffer.concat([
      Buffer.from('PACK\0\0\0\x02\0\0\0\x01', 'latin1'),
      Buffer.from([(6 << 4) | 5, 0]),
      deflateSync(Buffer.from([5, 5, 0x05, ...Buffer.from('hello')])),
    ]);
    const packed = Buffer.concat([selfRef, createHash('sha1').update(selfRef).digest()]);
    for (const bad of [packed, packed.subarray(0, 20), Buffer.from('not a pack at all, not at all')])
      await expect(completeThinPack(bad, async () => undefined)).rejects.toMatchObject({ code: 'KS_GIT_THIN_PACK' });
  });
});

describe('the fetch request', () => {
  const adv = (caps: string) =>
    Buffer.from(`001e# service=git-upload-pack\n0000${'0'.repeat(4)}${'a'.repeat(40)} HEAD\0${caps}\n0000`, 'latin1');

  it('asks for thin-pack (and no-progress) only of a server offering thin-pack and a side band', () => {
    expect(requestable(adv('multi_ack thin-pack side-band side-band-64k ofs-delta shallow no-progress'))).toEqual([
      'thin-pack',
      'no-progress',
    ]);
    expect(requestable(adv('multi_ack thin-pack side-band-64k ofs-delta'))).toEqual(['thin-pack']);
    expect(requestable(adv('multi_ack side-band-64k ofs-delta no-progress'))).toEqual([]);
    expect(requestable(adv('multi_ack thin-pack ofs-delta'))).toEqual([]);
    expect(requestable(Buffer.from('garbage'))).toEqual([]);
  });

  it('adds the capabilities to the first want line, keeping the pkt-line framing', () => {
    const want = `want ${'b'.repeat(40)} multi_ack_detailed side-band-64k ofs-delta\n`;
    const body = Buffer.from(
      `${(want.length + 4).toString(16).padStart(4, '0')}${want}0032want ${'c'.repeat(40)}\n00000009done\n`,
      'latin1',
    );
    const out = withCapabilities(body, ['thin-pack', 'no-progress'])!.toString('latin1');
    const line = `want ${'b'.repeat(40)} thin-pack no-progress multi_ack_detailed side-band-64k ofs-delta\n`;
    expect(out).toBe(
      `${(line.length + 4).toString(16).padStart(4, '0')}${line}0032want ${'c'.repeat(40)}\n00000009done\n`,
    );
    expect(withCapabilities(Buffer.from(out, 'latin1'), ['thin-pack'])).toBeUndefined();
    expect(withCapabilities(Buffer.from('0009done\n', 'latin1'), ['thin-pack'])).toBeUndefined();
  });
});

describe('the remote cache over thin packs (git http-backend)', { timeout: 180_000 }, () => {
  let server: GitHttpServer;
  let bare: string;
  let ws: string;
  beforeAll(async () => {
    server = await startGitHttpServer({ root: join(root, 'srv') });
    bare = server.createRepository('fleet');
    ws = mkdtempSync(join(root, 'ws-'));
    await gitOk('init', '--quiet', '--initial-branch=main', ws);
  });
  afterAll(() => server.stop());

  let n = 0;
  async function commitAndPush(files: Record<string, string>): Promise<string> {
    for (const [p, content] of Object.entries(files)) fs.writeFileSync(join(ws, p), content);
    await gitOk('-C', ws, 'add', '-A');
    await gitOk('-C', ws, 'commit', '--quiet', '-m', `commit ${++n}`);
    await gitOk('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
    return gitOk('-C', ws, 'rev-parse', 'HEAD');
  }

  /** Every file of `commit` as the cache reads it (isomorphic-git), under a deadline. */
  async function readAll(gitdir: string, commit: string): Promise<Record<string, string>> {
    const files: Record<string, string> = {};
    const { commit: c } = await git.readCommit({ fs, gitdir, oid: commit });
    for (const e of (await git.readTree({ fs, gitdir, oid: c.tree })).tree)
      files[e.path] = Buffer.from((await git.readBlob({ fs, gitdir, oid: e.oid })).blob).toString();
    return files;
  }

  async function packsStandAlone(gitdir: string): Promise<void> {
    const dir = join(gitdir, 'objects', 'pack');
    for (const name of readdirSync(dir).filter((f) => f.endsWith('.pack')))
      expect({ name, ...(await standsAlone(readFileSync(join(dir, name)))) }).toEqual({ name, ok: true, err: '' });
  }

  // The hang of issue 16: with thin packs stored as they came, the second fetch already leaves a pack that does not
  // stand alone, and (without that check) reading the reverted content back loops until the deadline.
  it('a revert and a deepened burst: thin on the wire, every stored pack whole, every read answered', async () => {
    const cache = new GitRemoteCache({
      url: server.url('fleet'),
      branchRef: 'refs/heads/main',
      cacheDir: join(root, 'cache'),
      headers: {},
      maxFetchBytes: 1 << 20,
      fetchTimeoutMs: 30_000,
      maxPacks: 100,
      maxCacheBytes: 1 << 24,
      redact: (t) => t,
    });
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}.txt`, text(60, -1, `${i}`)]));
    const v1 = { ...many, 'a.txt': text(300) };
    const v2 = { 'a.txt': text(300, 150, 'changed') };
    const fetch = async (expected: string, files: Record<string, string>) => {
      const tip = await withDeadline(cache.fetchTip(), 30_000, 'fetching');
      expect(tip).toBe(expected);
      await packsStandAlone(cache.gitdir!);
      const read = await withDeadline(readAll(cache.gitdir!, tip), 30_000, `reading ${tip}`);
      for (const [p, content] of Object.entries(files)) expect(read[p]).toBe(content);
    };

    const c1 = await commitAndPush(v1);
    await fetch(c1, v1);
    const before = cache.totals.bytesReceived;
    const c2 = await commitAndPush(v2);
    await fetch(c2, v2);
    // One line of one file changed: a thin pack of a few hundred bytes, not the 41 files of the tree.
    expect(cache.totals.bytesReceived - before).toBeLessThan(2_000);

    // The content comes back: the server sends the old blob as a delta of the one the cache has.
    const c3 = await commitAndPush({ 'a.txt': text(300) });
    await fetch(c3, { 'a.txt': text(300) });

    // A burst, going back and forth, then the history deepened behind the shallow tip (the ancestry check's path).
    let tip = c3;
    for (let i = 0; i < 5; i++)
      tip = await commitAndPush({
        'a.txt': i % 2 ? text(300) : text(300, 150, 'changed'),
        [`f${i}.txt`]: text(60, i, 'burst'),
      });
    await fetch(tip, { 'a.txt': text(300, 150, 'changed') });
    await withDeadline(cache.deepen(16), 30_000, 'deepening');
    await packsStandAlone(cache.gitdir!);
    for (const [c, files] of [
      [c1, v1],
      [c2, { 'a.txt': text(300, 150, 'changed') }],
      [c3, { 'a.txt': text(300) }],
    ] as const)
      expect(await withDeadline(readAll(cache.gitdir!, c), 30_000, `reading ${c}`)).toMatchObject(files);
  });
});
