// Issue 28, finding 4: anyone who can push can overwrite a device's notes ref with a notes commit of any size, and the
// device's stale-push recovery fetched the server's tip whole, into memory and into <state-dir>/notes.git (a 400 MB
// note: 2.7 GiB). Now that fetch is bounded (bytes on the wire, objects, inflated bytes) and a tip past the bounds is
// not read: the device replaces it with its own line, started afresh, and says so. Against a real git http-backend.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isStatusDeliveryError } from '../../src/report/commit-status.js';
import { deviceNotesRef } from '../../src/report/device-notes-ref.js';
import { cacheBytes } from '../../src/report/notes-cache-bound.js';
import { cliNote, git, NotesFixture, run, status } from '../support/notes-fixture.js';

let fx: NotesFixture;
beforeAll(async () => {
  fx = await NotesFixture.start();
});
afterAll(async () => {
  await fx.close();
});
afterEach(() => fx.cleanDirs());

const sh = async (cwd: string, script: string) =>
  (await run('sh', ['-c', script], { cwd, maxBuffer: 1 << 20 })).stdout.trim();

/**
 * What an attacker with push access does, straight in the server's repository: a notes commit on top of the device's
 * tip whose tree adds the note `content` (a shell command's output) for `commit`, set as the device's ref.
 */
async function overwrite(bare: string, ref: string, commit: string, content: string): Promise<string> {
  const blob = await sh(bare, `${content} | git hash-object -w --stdin`);
  const tip = await sh(bare, `git rev-parse ${ref}`);
  const tree = await sh(bare, `(git ls-tree ${tip}; printf '100644 blob ${blob}\\t${commit}\\n') | git mktree`);
  const bomb = await sh(bare, `git -c user.name=x -c user.email=x@x commit-tree ${tree} -p ${tip} -m 'not a report'`);
  await run('git', ['-C', bare, 'update-ref', ref, bomb]);
  return bomb;
}

const ZEROS = (bytes: number) => `head -c ${bytes} /dev/zero`;
const RANDOM = (bytes: number) => `head -c ${bytes} /dev/urandom`;

describe('the notes reporter when its own ref on the server is past what a device reads', () => {
  it('a note that inflates past the limit (16 MiB of zeros, 16 kB on the wire) is never read: the device replaces the ref with its own notes, afresh, and says so', async () => {
    const { url, bare, clone, commit } = await fx.remoteWithCommit('bomb-inflated');
    const cacheDir = join(fx.tempDir('keystone-notes-cache-'), 'notes.git');
    const a = fx.reporter(url, 'dev-a', { cacheDir, fetchLimits: { maxInflatedBytes: 4 << 20 } });
    const older = 'e'.repeat(40);
    await a.deliver(status(older, 'dev-a', 'success', 'applied'));
    const ref = deviceNotesRef('dev-a');
    const bomb = await overwrite(bare, ref, commit, ZEROS(16 << 20));

    const notice = await a.deliver(status(commit, 'dev-a', 'error', 'rejected: unsigned'));
    expect(notice, 'the delivery says it replaced the ref').toMatchObject({ code: 'KS_STATUS_NOTES_TOO_LARGE' });
    expect((notice as { message: string }).message).toMatch(
      /replaced by its own line, started afresh.*inflate to more than 4194304 bytes/,
    );
    // The server's ref: one root commit holding the device's own notes, old and new; the bomb is not in it.
    expect((await git(bare, 'rev-list', ref)).trim().split('\n')).toHaveLength(1);
    expect(
      await git(bare, 'merge-base', '--is-ancestor', bomb, ref).then(
        () => true,
        () => false,
      ),
    ).toBe(false);
    expect(await cliNote(clone, commit)).toBe('keystone/dev-a error 2025-01-02T03:04:05.000Z rejected: unsigned\n');
    expect(await cliNote(clone, older)).toBe('keystone/dev-a success 2025-01-02T03:04:05.000Z applied\n');
    // Nothing of it reached the cache, and the next report is one request again.
    expect(cacheBytes(cacheDir)).toBeLessThan(1 << 20);
    const from = fx.server.requests.length;
    expect(await a.deliver(status(commit, 'dev-a', 'success', 'applied'))).toBeUndefined();
    expect(fx.served('bomb-inflated', from).map((r) => `${r.method} ${r.path.split('/').pop()}`)).toEqual([
      'POST git-receive-pack',
    ]);
  });

  it('so is one past the cap on bytes on the wire (2 MiB that do not compress), and one with more objects than the cap', async () => {
    const { url, bare, clone, commit } = await fx.remoteWithCommit('bomb-wire');
    const ref = deviceNotesRef('dev-a');
    const a = fx.reporter(url, 'dev-a', { fetchLimits: { maxBytes: 512 << 10 } });
    await a.deliver(status(commit, 'dev-a', 'pending', 'applying'));
    await overwrite(bare, ref, commit, RANDOM(2 << 20));
    const wire = await a.deliver(status(commit, 'dev-a', 'success', 'applied'));
    expect(wire).toMatchObject({
      code: 'KS_STATUS_NOTES_TOO_LARGE',
      message: expect.stringMatching(/more than 524288 bytes/),
    });
    expect(await cliNote(clone, commit)).toBe('keystone/dev-a success 2025-01-02T03:04:05.000Z applied\n');

    // 600 small notes: more objects than a cap of 100.
    const b = fx.reporter(url, 'dev-b', { fetchLimits: { maxObjects: 100 } });
    await b.deliver(status(commit, 'dev-b', 'pending', 'applying'));
    const refB = deviceNotesRef('dev-b');
    const files = Array.from(
      { length: 600 },
      (_, i) => `M 100644 inline ${(i + 1).toString(16).padStart(40, 'a')}\ndata 6\n${String(i).padStart(5, '0')}\n`,
    ).join('');
    const stream = join(fx.tempDir(), 'stream');
    writeFileSync(
      stream,
      `commit ${refB}\ncommitter x <x@x> 0 +0000\ndata 4\nmany\nfrom ${(await git(bare, 'rev-parse', refB)).trim()}\n${files}\n`,
    );
    await sh(bare, `git fast-import --quiet < ${stream}`);
    const many = await b.deliver(status(commit, 'dev-b', 'success', 'applied'));
    expect(many).toMatchObject({
      code: 'KS_STATUS_NOTES_TOO_LARGE',
      message: expect.stringMatching(/objects \(the limit is 100\)/),
    });
    expect(await cliNote(clone, commit, 'dev-b')).toBe('keystone/dev-b success 2025-01-02T03:04:05.000Z applied\n');
  });

  it('a server that will not have the ref replaced: a retryable KS_STATUS_NOTES_TOO_LARGE naming the fix, no second fetch, and reports again once the ref is deleted', async () => {
    const { url, bare, clone, commit } = await fx.remoteWithCommit('bomb-denied');
    // A host's rule against force pushes, as an update hook (git's receive.denyNonFastForwards covers branches only).
    const hook = join(bare, 'hooks', 'update');
    writeFileSync(
      hook,
      '#!/bin/sh\ncur=$(git rev-parse -q --verify "$1") || exit 0\n[ "$3" = 0000000000000000000000000000000000000000 ] || git merge-base --is-ancestor "$cur" "$3" || { echo "no force pushes here" >&2; exit 1; }\n',
    );
    chmodSync(hook, 0o755);
    const ref = deviceNotesRef('dev-a');
    const a = fx.reporter(url, 'dev-a', { fetchLimits: { maxInflatedBytes: 1 << 20 } });
    await a.deliver(status(commit, 'dev-a', 'pending', 'applying'));
    await overwrite(bare, ref, commit, ZEROS(8 << 20));
    const refused = await a.deliver(status(commit, 'dev-a', 'success', 'applied')).catch((e: unknown) => e);
    expect(isStatusDeliveryError(refused, 'KS_STATUS_NOTES_TOO_LARGE') && refused.retryable, String(refused)).toBe(
      true,
    );
    expect(String(refused)).toContain('the server refused to replace it');
    expect(String(refused)).toContain(`delete ${ref} on the server`);
    // The outbox tries again: the tip it refused is not fetched again.
    const from = fx.server.requests.length;
    const again = await a.deliver(status(commit, 'dev-a', 'success', 'applied')).catch((e: unknown) => e);
    expect(isStatusDeliveryError(again, 'KS_STATUS_NOTES_TOO_LARGE'), String(again)).toBe(true);
    expect(fx.served('bomb-denied', from).filter((r) => r.path.endsWith('/git-upload-pack'))).toEqual([]);
    // The operator deletes the ref: the device's notes arrive, afresh.
    await run('git', ['-C', bare, 'update-ref', '-d', ref]);
    await a.deliver(status(commit, 'dev-a', 'success', 'applied'));
    expect(await cliNote(clone, commit)).toBe('keystone/dev-a success 2025-01-02T03:04:05.000Z applied\n');
  });

  it('a tip within the limits is built on as before, fetched at depth 1: only the tip and its tree reach the cache', async () => {
    const { url, bare, clone, commit } = await fx.remoteWithCommit('within');
    const ref = deviceNotesRef('dev-a');
    const a = fx.reporter(url, 'dev-a');
    for (let i = 0; i < 5; i++) await a.deliver(status(commit, 'dev-a', i % 2 ? 'success' : 'pending', `report ${i}`));
    // Another agent under the same name wrote on top (a wiped cache, a second device): a small, ordinary note.
    const theirs = await overwrite(
      bare,
      ref,
      'd'.repeat(40),
      `printf 'keystone/dev-a success 2025-01-01T00:00:00.000Z applied\\n'`,
    );
    const cache = join(fx.tempDir('keystone-notes-cache-'), 'notes.git');
    const fresh = fx.reporter(url, 'dev-a', { cacheDir: cache });
    expect(await fresh.deliver(status(commit, 'dev-a', 'success', 'applied'))).toBeUndefined();
    expect((await git(bare, 'rev-parse', `${ref}^`)).trim()).toBe(theirs);
    expect(await cliNote(clone, 'd'.repeat(40))).toBe('keystone/dev-a success 2025-01-01T00:00:00.000Z applied\n');
    // The history below the tip stayed on the server: the fresh cache holds the fetched tip only (shallow).
    expect((await run('git', ['--git-dir', cache, 'rev-list', '--count', ref])).stdout.trim()).toBe('2');
  });
});
