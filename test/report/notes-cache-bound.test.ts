// Issue 28, finding 5: `<state-dir>/notes.git` grew quadratically and was never pruned (238 MiB after 3,000 reports):
// each report wrote the device's whole notes tree again as a new loose object, and every notes commit stayed. Now the
// tree is fanned out (a report rewrites one small tree per level) and the cache is compacted once it grew by its bound
// (notes-cache-bound.ts). The short version of `npm run bench -- notes-cache` (10,000 reports), against a real git
// http-backend, with a bound of 256 KiB checked every 4 reports.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deviceNotesRef } from '../../src/report/device-notes-ref.js';
import { cacheBytes } from '../../src/report/notes-cache-bound.js';
import { FANOUT_AT } from '../../src/report/notes-tree.js';
import { cliNote, git, NotesFixture, run, status } from '../support/notes-fixture.js';

let fx: NotesFixture;
beforeAll(async () => {
  fx = await NotesFixture.start();
});
afterAll(async () => {
  await fx.close();
});
afterEach(() => fx.cleanDirs());

const REPORTS = 300;
const GROWTH = 256 << 10;
/** What the cache may take: the bound, four reports' worth past it, and the tip's notes and files (~150 kB here). */
const CEILING = 512 << 10;
const commitOf = (i: number) => createHash('sha1').update(`commit ${i}`).digest('hex');

describe('the notes cache of a device that reports at every poll', () => {
  it(`${REPORTS} reports, one note each: the cache stays under ${CEILING / 1024} KiB while ${REPORTS} reports write over 4 times that, and every note stays on the server`, async () => {
    const { url, clone } = await fx.remoteWithCommit('bound');
    const cacheDir = join(fx.tempDir('keystone-notes-cache-'), 'notes.git');
    const a = fx.reporter(url, 'dev-a', { cacheDir, cacheBound: { growthBytes: GROWTH, checkEvery: 4 } });
    let peak = 0;
    let written = 0; // every byte the cache grew by, report after report: what it would hold if nothing were pruned
    let before = 0;
    for (let i = 0; i < REPORTS; i++) {
      await a.deliver(status(commitOf(i), 'dev-a', 'error', `rejected: unsigned ${i}`));
      const now = cacheBytes(cacheDir);
      written += Math.max(0, now - before);
      before = now;
      peak = Math.max(peak, now);
    }
    expect(written, 'without pruning the cache would hold this much').toBeGreaterThan(4 * CEILING);
    expect(peak, `the cache peaked at ${peak} bytes`).toBeLessThan(CEILING);

    // The server has every note, in git's fanout layout (no level holds more than FANOUT_AT notes), readable by git.
    const ref = deviceNotesRef('dev-a');
    await git(clone, 'fetch', '--quiet', 'origin', `+${ref}:${ref}`);
    expect((await git(clone, 'ls-tree', '-r', '--name-only', ref)).trim().split('\n')).toHaveLength(REPORTS);
    const top = (await git(clone, 'ls-tree', ref)).trim().split('\n');
    expect(top.length).toBeLessThanOrEqual(FANOUT_AT);
    expect(
      top.every((l) => /^040000 tree [0-9a-f]{40}\t[0-9a-f]{2}$/.test(l)),
      top.slice(0, 3).join('\n'),
    ).toBe(true);
    for (const i of [0, REPORTS / 2, REPORTS - 1])
      expect(await cliNote(clone, commitOf(i))).toBe(
        `keystone/dev-a error 2025-01-02T03:04:05.000Z rejected: unsigned ${i}\n`,
      );
    // The history stays on the server, one notes commit per report, though the cache keeps only its tip.
    expect((await git(clone, 'rev-list', '--count', ref)).trim()).toBe(String(REPORTS));
  }, 180_000);

  it('a cache compacted at every report still pushes one request a report, builds on a tip someone else moved, and starts afresh when the server lost the ref', async () => {
    const { url, bare, clone, commit } = await fx.remoteWithCommit('compacted');
    const cacheDir = join(fx.tempDir('keystone-notes-cache-'), 'notes.git');
    const a = fx.reporter(url, 'dev-a', { cacheDir, cacheBound: { growthBytes: 0, checkEvery: 1 } });
    const ref = deviceNotesRef('dev-a');
    for (let i = 0; i < 3; i++) await a.deliver(status(commitOf(i), 'dev-a', 'success', 'applied'));
    // Compacted: one pack, no loose object, the tip marked shallow.
    expect(readdirSync(join(cacheDir, 'objects')).filter((d) => /^[0-9a-f]{2}$/.test(d))).toEqual([]);
    expect(readdirSync(join(cacheDir, 'objects', 'pack')).sort()).toEqual([
      expect.stringMatching(/^pack-[0-9a-f]{40}\.idx$/),
      expect.stringMatching(/^pack-[0-9a-f]{40}\.pack$/),
    ]);
    expect(readFileSync(join(cacheDir, 'shallow'), 'utf8')).toBe(`${(await git(bare, 'rev-parse', ref)).trim()}\n`);
    const from = fx.server.requests.length;
    await a.deliver(status(commit, 'dev-a', 'pending', 'applying'));
    expect(fx.served('compacted', from).map((r) => `${r.method} ${r.path.split('/').pop()}`)).toEqual([
      'POST git-receive-pack',
    ]);

    // Someone else's notes commit on top (a second agent under this name): fetched, built on, nothing lost.
    const other = 'd'.repeat(40);
    const blob = (
      await run(
        'sh',
        [
          '-c',
          `printf 'keystone/dev-a success 2025-01-01T00:00:00.000Z by the other one\\n' | git hash-object -w --stdin`,
        ],
        { cwd: bare },
      )
    ).stdout.trim();
    const tree = (
      await run(
        'sh',
        ['-c', `(git ls-tree $(git rev-parse ${ref}); printf '100644 blob ${blob}\\t${other}\\n') | git mktree`],
        { cwd: bare },
      )
    ).stdout.trim();
    const theirs = (
      await run('git', ['-c', 'user.name=x', '-c', 'user.email=x@x', 'commit-tree', tree, '-p', ref, '-m', 'other'], {
        cwd: bare,
      })
    ).stdout.trim();
    await run('git', ['-C', bare, 'update-ref', ref, theirs]);
    await a.deliver(status(commit, 'dev-a', 'success', 'applied'));
    expect((await git(bare, 'rev-parse', `${ref}^`)).trim()).toBe(theirs);
    expect(await cliNote(clone, other)).toBe('keystone/dev-a success 2025-01-01T00:00:00.000Z by the other one\n');
    expect(await cliNote(clone, commitOf(0))).toBe('keystone/dev-a success 2025-01-02T03:04:05.000Z applied\n');

    // The server lost the ref: every note comes back, in one root commit.
    await run('git', ['-C', bare, 'update-ref', '-d', ref]);
    await a.deliver(status(commitOf(9), 'dev-a', 'error', 'rejected: unsigned'));
    expect((await git(bare, 'rev-list', '--count', ref)).trim()).toBe('1');
    expect((await git(bare, 'ls-tree', '-r', '--name-only', ref)).trim().split('\n')).toHaveLength(6);
    expect((await run('git', ['-C', bare, 'fsck', '--connectivity-only'])).stderr).not.toMatch(/missing|broken/);
  });
});
