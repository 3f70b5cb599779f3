// A Git source whose cache cannot be read (a pack damaged on disk, an SD card's bad block, or one stored damaged by an
// earlier version) rebuilds it rather than failing on it for good. isomorphic-git checks a pack's checksum at its first
// read, so such a pack fails every read of the objects it holds; the source used to offer a commit from it that could
// not be read (a restart finds the tip "already here"), and nothing ever fetched again.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Revision } from '../../src/source/directory-source.js';
import { GitSource } from '../../src/source/git-source.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

let root: string;
let server: GitHttpServer;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-cache-damage-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** A source on `cacheDir` (a fresh one is an agent restarted on the same state directory), and what it reported. */
function source(cacheDir: string, url: string, applied: () => string | undefined) {
  const offered: Revision[] = [];
  const errors: string[] = [];
  const s = new GitSource({
    repo: url,
    ref: 'main',
    cacheDir,
    pollMs: 3_600_000,
    random: () => 0.5,
    lastAppliedCommit: applied,
    allowHistoryRewrite: false,
    onRevision: (r) => offered.push(r),
    onRejected: (r) => errors.push(`${r.code} ${r.reason}`),
    onError: (e) => errors.push(`${e.code} ${e.message}`),
  });
  return { s, offered, errors };
}

/** The cache's packs, oldest first. */
function packs(cacheDir: string): string[] {
  return readdirSync(cacheDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.pack'))
    .map((e) => join(e.parentPath, e.name))
    .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
}

/** Flips bytes in the middle of each pack. */
function damage(files: string[]): number {
  for (const file of files) {
    const bytes = readFileSync(file);
    for (let i = Math.floor(bytes.length / 2); i < Math.floor(bytes.length / 2) + 4; i++) bytes[i] = bytes[i]! ^ 0xff;
    writeFileSync(file, bytes);
  }
  return files.length;
}

/** A repository on the server and a work tree pushing to it; commit() writes config.toml and returns the commit id. */
async function repository(name: string) {
  server.createRepository(name);
  const url = server.url(name);
  const work = join(root, `work-${name}`);
  await gitIn(root, ['init', '--quiet', '--initial-branch=main', work]);
  const commit = async (text: string, push = true) => {
    writeFileSync(join(work, 'config.toml'), text);
    await gitIn(work, ['add', '-A']);
    await gitIn(work, ['commit', '--quiet', '-m', text]);
    if (push) await gitIn(work, ['push', '--quiet', url, 'HEAD:refs/heads/main']);
    return gitIn(work, ['rev-parse', 'HEAD']);
  };
  return { url, commit, cacheDir: join(root, `cache-${name}`) };
}

async function reads(r: Revision): Promise<string> {
  const got = await r.reader.readFile('config.toml', 1 << 20);
  if (!got.ok) throw new Error(got.message);
  return Buffer.from(got.bytes).toString('utf8');
}

describe('a Git cache that cannot be read', () => {
  it('is rebuilt: the tip at hand (after a restart) and a new commit are both fetched again and read', async () => {
    const { url, commit, cacheDir } = await repository('tip');
    const c1 = await commit('version = 1\n');
    let applied: string | undefined = undefined;
    const first = source(cacheDir, url, () => applied);
    await first.s.syncNow();
    await first.s.close();
    expect(first.errors).toEqual([]);
    expect(await reads(first.offered[0]!)).toBe('version = 1\n');
    applied = c1;

    expect(damage(packs(cacheDir))).toBeGreaterThan(0);
    // Restarted: the branch still points at the commit applied, which is in the (damaged) cache.
    const again = source(cacheDir, url, () => applied);
    await again.s.syncNow();
    expect(again.errors).toEqual([]);
    expect(again.offered.map((r) => r.id)).toEqual([c1]);
    expect(await reads(again.offered[0]!)).toBe('version = 1\n');

    // And it follows on from the rebuilt cache.
    const c2 = await commit('version = 2\n');
    await again.s.syncNow();
    await again.s.close();
    expect(again.errors).toEqual([]);
    expect(again.offered.map((r) => r.id)).toEqual([c1, c2]);
    expect(await reads(again.offered[1]!)).toBe('version = 2\n');
  });

  it('is rebuilt when a commit behind the tip cannot be read (the pack a deepening brought)', async () => {
    const { url, commit, cacheDir } = await repository('history');
    const c1 = await commit('version = 1\n');
    let applied: string | undefined = undefined;
    const first = source(cacheDir, url, () => applied);
    await first.s.syncNow();
    applied = c1;
    // Two commits at once: the tip comes in one pack, its parent in another, fetched to find c1 behind it.
    await commit('version = 2\n', false);
    const c3 = await commit('version = 3\n');
    await first.s.syncNow();
    await first.s.close();
    expect(first.errors).toEqual([]);
    const all = packs(cacheDir);
    expect(all.length).toBe(3);
    damage([all.at(-1)!]);

    // Restarted with c1 applied: c3 reads, the walk back to c1 does not.
    // The look that finds the damage fails (KS_GIT_FAILED); the next one fetches into a fresh cache.
    const again = source(cacheDir, url, () => applied);
    await again.s.syncNow();
    expect(again.errors).toHaveLength(1);
    expect(again.offered).toEqual([]);
    await again.s.syncNow();
    await again.s.close();
    expect(again.errors).toHaveLength(1);
    expect(again.offered.map((r) => r.id)).toEqual([c3]);
    expect(await reads(again.offered[0]!)).toBe('version = 3\n');
  });
});
