// The Git notes reporter's rollout refs (SPEC §14) against a real Git smart-HTTP server (git http-backend): a device's
// notes ref, its rollout ref for the commit and the deletion of the ones it no longer keeps go in one receive-pack
// POST, without the ref advertisement; only when the server holds other values than the device's cache says (someone
// moved a ref, the cache was wiped) does it ask the server, and then it converges in the same delivery.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isStatusDeliveryError, type CommitStatus } from '../../src/report/commit-status.js';
import { deviceNotesRef } from '../../src/report/device-notes-ref.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { rolloutRef } from '../../src/report/rollout-refs.js';
import { git, NotesFixture, status } from '../support/notes-fixture.js';
import type { RolloutState } from '../../src/core/rollout-gate.js';

let fx: NotesFixture;
beforeAll(async () => {
  fx = await NotesFixture.start();
});
afterAll(async () => {
  await fx.close();
});
afterEach(() => fx.cleanDirs());

const C1 = '1'.repeat(40);
const C2 = '2'.repeat(40);
const C3 = '3'.repeat(40);

function rolled(
  commit: string,
  device: string,
  state: RolloutState,
  wave: string,
  keep: string[],
  at = Date.UTC(2025, 0, 2, 3, 4, 5),
): CommitStatus {
  const commitState = state === 'success' ? 'success' : state === 'failure' ? 'failure' : 'pending';
  return {
    ...status(commit, device, commitState, `${state} ${commit.slice(0, 4)}`, at),
    rollout: { wave, state, keep },
  };
}

/** The repository's refs under `prefixes`, ref → id. */
async function refsOf(gitdir: string, ...prefixes: string[]): Promise<Record<string, string>> {
  const out = await git(gitdir, 'for-each-ref', '--format=%(refname) %(objectname)', ...prefixes);
  return Object.fromEntries(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ') as [string, string]),
  );
}

/** The server's requests to one repository from index `from` on, as `METHOD service`. */
function served(name: string, from: number): string[] {
  return fx
    .served(name, from)
    .map((r) => `${r.method} ${r.path.slice(name.length + 6)}${r.query ? `?${r.query}` : ''}`);
}

const POST = 'POST git-receive-pack';
const ADVERT = 'GET info/refs?service=git-receive-pack';

describe('GitNotesReporter rollout refs on a remote', () => {
  it('pushes the rollout ref with the note, keeps what it is told to keep and deletes the rest, one request per report', async () => {
    const { url, bare } = await fx.remoteWithCommit('rollout');
    const a = fx.reporter(url, 'dev-a');
    const b = fx.reporter(url, 'dev-b');
    const notesA = deviceNotesRef('dev-a');
    const tipA = async () => (await refsOf(bare, notesA))[notesA];
    await b.deliver(rolled(C1, 'dev-b', 'success', 'canary', []));
    const bRef = rolloutRef({ wave: 'canary', device: 'dev-b', commit: C1, state: 'success' });

    let from = fx.server.requests.length;
    await a.deliver(rolled(C1, 'dev-a', 'applying', 'canary', []));
    const applying = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C1, state: 'applying' });
    expect(await refsOf(bare, 'refs/keystone-rollout/')).toEqual({
      [applying]: await tipA(),
      [bRef]: expect.any(String),
    });
    expect(served('rollout', from)).toEqual([POST]);

    // The same commit in another state: one ref per device and commit, so the applying ref goes.
    from = fx.server.requests.length;
    await a.deliver(rolled(C1, 'dev-a', 'success', 'canary', []));
    const first = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C1, state: 'success' });
    expect(await refsOf(bare, 'refs/keystone-rollout/')).toEqual({ [first]: await tipA(), [bRef]: expect.any(String) });
    expect(served('rollout', from)).toEqual([POST]);
    const firstTip = await tipA();

    // A newer commit, held, keeping the one it runs.
    from = fx.server.requests.length;
    await a.deliver(rolled(C2, 'dev-a', 'held', 'canary', [C1]));
    const second = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C2, state: 'held' });
    expect(await refsOf(bare, 'refs/keystone-rollout/')).toEqual({
      [first]: firstTip,
      [second]: await tipA(),
      [bRef]: expect.any(String),
    });
    expect(served('rollout', from)).toEqual([POST]);

    // A third, in another wave, keeping nothing: the device's older refs go, in any wave; dev-b's stay.
    from = fx.server.requests.length;
    await a.deliver(rolled(C3, 'dev-a', 'success', 'main', []));
    const third = rolloutRef({ wave: 'main', device: 'dev-a', commit: C3, state: 'success' });
    expect(await refsOf(bare, 'refs/keystone-rollout/')).toEqual({ [third]: await tipA(), [bRef]: expect.any(String) });
    expect(served('rollout', from)).toEqual([POST]);

    // A status without a rollout leaves the rollout refs alone.
    from = fx.server.requests.length;
    await a.deliver(status(C3, 'dev-a', 'success', 'applied again'));
    expect(Object.keys(await refsOf(bare, 'refs/keystone-rollout/'))).toEqual([third, bRef].sort());
    expect(served('rollout', from)).toEqual([POST]);
    // The notes history is linear and holds every line.
    expect((await git(bare, 'log', '--format=%s', notesA)).trim().split('\n')).toHaveLength(5);
    expect(await git(bare, 'notes', '--ref', notesA, 'show', C1)).toBe(
      'keystone/dev-a success 2025-01-02T03:04:05.000Z success 1111\n',
    );
  });

  it('falls back when someone else moved its refs on the server: asks once, rebuilds, and is back to one request', async () => {
    const { url, bare, clone } = await fx.remoteWithCommit('moved');
    const a = fx.reporter(url, 'dev-a');
    const notesA = deviceNotesRef('dev-a');
    await a.deliver(rolled(C1, 'dev-a', 'success', 'canary', []));
    await a.deliver(rolled(C2, 'dev-a', 'applying', 'canary', [C1]));
    const first = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C1, state: 'success' });
    const second = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C2, state: 'applying' });

    // Another agent under the same name adds a note on its own, and an operator points the first rollout ref elsewhere.
    await git(clone, 'fetch', '--quiet', 'origin', `+${notesA}:${notesA}`);
    await git(
      clone,
      'notes',
      '--ref',
      notesA,
      'add',
      '-m',
      'keystone/dev-a success 2025-01-01T00:00:00.000Z by the other agent',
      C3,
    );
    await git(clone, 'push', '--quiet', 'origin', `${notesA}:${notesA}`);
    const theirs = (await refsOf(bare, notesA))[notesA]!;
    await git(bare, 'update-ref', first, theirs);

    let from = fx.server.requests.length;
    await a.deliver(rolled(C2, 'dev-a', 'success', 'canary', []));
    // Refused as stale, the refs learnt from the advertisement, the notes tip it lacks fetched, pushed again.
    expect(served('moved', from)).toEqual([
      POST,
      ADVERT,
      'GET info/refs?service=git-upload-pack',
      'POST git-upload-pack',
      POST,
    ]);
    const tip = (await refsOf(bare, notesA))[notesA]!;
    const done = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C2, state: 'success' });
    expect(await refsOf(bare, 'refs/keystone-rollout/')).toEqual({ [done]: tip });
    expect((await git(bare, 'rev-parse', `${tip}^`)).trim()).toBe(theirs); // built on their tip
    expect(await git(bare, 'notes', '--ref', notesA, 'show', C3)).toBe(
      'keystone/dev-a success 2025-01-01T00:00:00.000Z by the other agent\n',
    );
    expect(await git(bare, 'notes', '--ref', notesA, 'show', C2)).toBe(
      'keystone/dev-a success 2025-01-02T03:04:05.000Z success 2222\n',
    );
    expect(second).not.toBe(done);

    from = fx.server.requests.length;
    await a.deliver(rolled(C3, 'dev-a', 'applying', 'canary', [C2]));
    expect(served('moved', from)).toEqual([POST]);
    expect(Object.keys(await refsOf(bare, 'refs/keystone-rollout/'))).toEqual(
      [done, rolloutRef({ wave: 'canary', device: 'dev-a', commit: C3, state: 'applying' })].sort(),
    );
  });

  it('a device whose cache was wiped learns its rollout refs from the server and deletes the ones it no longer keeps', async () => {
    const { url, bare } = await fx.remoteWithCommit('wiped');
    await fx.reporter(url, 'dev-a').deliver(rolled(C1, 'dev-a', 'success', 'canary', []));
    await fx.reporter(url, 'dev-a').deliver(rolled(C2, 'dev-a', 'held', 'canary', [C1])); // another cache: also wiped
    const fresh = fx.reporter(url, 'dev-a');
    const from = fx.server.requests.length;
    await fresh.deliver(rolled(C3, 'dev-a', 'success', 'canary', [C2]));
    const tip = (await refsOf(bare, deviceNotesRef('dev-a')))[deviceNotesRef('dev-a')];
    expect(await refsOf(bare, 'refs/keystone-rollout/')).toEqual({
      [rolloutRef({ wave: 'canary', device: 'dev-a', commit: C2, state: 'held' })]: expect.any(String),
      [rolloutRef({ wave: 'canary', device: 'dev-a', commit: C3, state: 'success' })]: tip,
    });
    // Its first push names no old values, so the server refuses the notes ref (and takes the new rollout ref); one
    // advertisement tells it the rest, its notes tip is fetched, and the second push converges.
    expect(served('wiped', from)).toEqual([
      POST,
      ADVERT,
      'GET info/refs?service=git-upload-pack',
      'POST git-upload-pack',
      POST,
    ]);
    // Every line of the three reports is in the notes: the fresh cache built on the server's tip.
    for (const c of [C1, C2, C3])
      expect(await git(bare, 'notes', '--ref', deviceNotesRef('dev-a'), 'show', c)).toMatch(/^keystone\/dev-a /);
    // And the next report is one request again.
    const next = fx.server.requests.length;
    await fresh.deliver(rolled(C3, 'dev-a', 'success', 'canary', []));
    expect(served('wiped', next)).toEqual([POST]);
  });

  it('a report that did not arrive (server down) leaves the server values it knows as they were: one request later', async () => {
    const { url, bare } = await fx.remoteWithCommit('down');
    const a = fx.reporter(url, 'dev-a');
    await a.deliver(rolled(C1, 'dev-a', 'success', 'canary', []));
    await fx.server.stop();
    try {
      const err = await a.deliver(rolled(C2, 'dev-a', 'applying', 'canary', [])).catch((e: unknown) => e);
      expect(isStatusDeliveryError(err, 'KS_STATUS_UNREACHABLE')).toBe(true);
    } finally {
      await fx.server.start();
    }
    const from = fx.server.requests.length;
    await a.deliver(rolled(C2, 'dev-a', 'success', 'canary', []));
    expect(served('down', from)).toEqual([POST]);
    // The line of the report that failed travels with this one (the cache kept it).
    expect(await git(bare, 'notes', '--ref', deviceNotesRef('dev-a'), 'show', C2)).toBe(
      'keystone/dev-a success 2025-01-02T03:04:05.000Z success 2222\n',
    );
    expect(Object.keys(await refsOf(bare, 'refs/keystone-rollout/'))).toEqual([
      rolloutRef({ wave: 'canary', device: 'dev-a', commit: C2, state: 'success' }),
    ]);
    expect((await git(bare, 'log', '--format=%s', deviceNotesRef('dev-a'))).trim().split('\n')).toHaveLength(3);
  });

  it('keeps to its deadline: a server that does not answer in time is a retryable KS_STATUS_UNREACHABLE', async () => {
    const { url } = await fx.remoteWithCommit('slow');
    fx.server.delayMs = 1_000;
    try {
      const started = Date.now();
      const err = await fx
        .reporter(url, 'dev-a', { timeoutMs: 200 })
        .deliver(rolled(C1, 'dev-a', 'success', 'canary', []))
        .catch((e: unknown) => e);
      expect(isStatusDeliveryError(err, 'KS_STATUS_UNREACHABLE')).toBe(true);
      expect(String((err as Error).message)).toMatch(/no answer within 200 ms/);
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      fx.server.delayMs = 0;
    }
  });

  it('gives up retryably with KS_STATUS_CONFLICT when its attempts run out, and permanently when the server refuses a ref', async () => {
    const { url, bare } = await fx.remoteWithCommit('refused');
    await fx.reporter(url, 'dev-a').deliver(rolled(C1, 'dev-a', 'success', 'canary', []));
    // A fresh cache believes the refs absent; with one attempt it cannot learn otherwise.
    const from = fx.server.requests.length;
    const conflict = await fx
      .reporter(url, 'dev-a', { pushAttempts: 1 })
      .deliver(rolled(C2, 'dev-a', 'success', 'canary', []))
      .catch((e: unknown) => e);
    expect(isStatusDeliveryError(conflict, 'KS_STATUS_CONFLICT')).toBe(true);
    expect((conflict as { retryable: boolean }).retryable).toBe(true);
    expect(served('refused', from)).toEqual([POST]);

    writeFileSync(
      join(bare, 'hooks', 'update'),
      '#!/bin/sh\ncase "$1" in refs/keystone-rollout/*) exit 1;; esac\nexit 0\n',
      { mode: 0o755 },
    );
    const rejected = await fx
      .reporter(url, 'dev-b')
      .deliver(rolled(C1, 'dev-b', 'success', 'canary', []))
      .catch((e: unknown) => e);
    expect(isStatusDeliveryError(rejected, 'KS_STATUS_REJECTED')).toBe(true);
    expect((rejected as { retryable: boolean }).retryable).toBe(false);
    expect(String((rejected as Error).message)).toMatch(/hook declined/);
  });
});

describe('GitNotesReporter rollout refs on a local repository path', () => {
  it('writes and deletes the rollout refs straight in the repository', async () => {
    const repo = fx.tempDir('keystone-notes-local-rollout-');
    await git(repo, 'init', '--quiet', '--initial-branch=main');
    const gitdir = join(repo, '.git');
    const reporter = new GitNotesReporter({ repository: repo });
    const notesA = deviceNotesRef('dev-a');
    await reporter.deliver(rolled(C1, 'dev-a', 'success', 'canary', []));
    await new GitNotesReporter({ repository: repo }).deliver(rolled(C1, 'dev-b', 'failure', 'canary', []));
    await reporter.deliver(rolled(C2, 'dev-a', 'applying', 'canary', [C1]));
    const first = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C1, state: 'success' });
    const second = rolloutRef({ wave: 'canary', device: 'dev-a', commit: C2, state: 'applying' });
    const other = rolloutRef({ wave: 'canary', device: 'dev-b', commit: C1, state: 'failure' });
    let notes = (await refsOf(gitdir, notesA))[notesA]!;
    expect(await refsOf(gitdir, 'refs/keystone-rollout/')).toEqual({
      [first]: `${(await git(repo, 'rev-parse', `${notes}^`)).trim()}`,
      [second]: notes,
      [other]: expect.any(String),
    });

    await reporter.deliver(rolled(C3, 'dev-a', 'success', 'main', []));
    notes = (await refsOf(gitdir, notesA))[notesA]!;
    const third = rolloutRef({ wave: 'main', device: 'dev-a', commit: C3, state: 'success' });
    expect(await refsOf(gitdir, 'refs/keystone-rollout/')).toEqual({ [third]: notes, [other]: expect.any(String) });
  });
});
