// Rollout refs and the outbox's order (found by review): the outbox orders reports per (reporter, commit) only, and
// each report's `keep` list is decided when it is written. A report of an older commit retried after a newer commit's
// went through must not delete the newer commit's rollout ref (the device's success) nor bring back one nobody keeps:
// the reporter writes rollout refs only from the newest status it has seen (its seq, the outbox row id).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StatusDeliveryError, type CommitStatus, type StatusReporter } from '../../src/report/commit-status.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { rolloutRef } from '../../src/report/rollout-refs.js';
import { StatusOutbox } from '../../src/report/status-outbox.js';
import { openStateStore } from '../../src/store/state-store.js';
import type { RolloutState } from '../../src/core/rollout-gate.js';
import { GIT_ENV } from '../support/git-env.js';
import { until } from '../support/composite-fixture.js';

const dirs: string[] = [];
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'ks-rollout-order-'));
  dirs.push(d);
  return d;
};

const C1 = '1'.repeat(40);
const C2 = '2'.repeat(40);
const C3 = '3'.repeat(40);
const st = (commit: string, state: RolloutState, keep: string[]): CommitStatus => ({
  commit,
  state: state === 'success' ? 'success' : 'pending',
  description: state,
  context: 'keystone/dev-a',
  at: Date.now(),
  rollout: { wave: 'canary', state, keep },
});

describe('rollout refs and the outbox order', () => {
  it('a held report retried after a newer commit succeeded does not delete that success nor leave a stale held ref', async () => {
    const bare = temp();
    execFileSync('git', ['init', '--quiet', '--bare', bare], { env: GIT_ENV });
    const notes = new GitNotesReporter({ repository: bare });
    let failOnce = true;
    // The network drops one delivery (the first report on C2): an ordinary transient failure.
    const flaky: StatusReporter = {
      name: 'git-notes',
      async deliver(s) {
        if (s.commit === C2 && failOnce) {
          failOnce = false;
          throw new StatusDeliveryError('KS_STATUS_UNREACHABLE', 'ECONNRESET');
        }
        return notes.deliver(s);
      },
    };
    const store = openStateStore(temp());
    cleanup.push(() => store.close());
    const outbox = new StatusOutbox({
      store,
      reporters: [flaky],
      initialBackoffMs: 300,
      maxBackoffMs: 300,
      random: () => 0.5,
    });
    cleanup.push(() => outbox.close());
    outbox.start();
    outbox.enqueue(st(C1, 'success', []));
    await outbox.idle();
    // The device holds C2 (it runs C1)...
    outbox.enqueue(st(C2, 'held', [C1]));
    await outbox.idle();
    // ...then C3 opens (a newer commit, or a revert): C2 is dropped, C3 applied and succeeds.
    outbox.enqueue(st(C3, 'applying', [C1]));
    outbox.enqueue(st(C3, 'success', []));
    await until(() => outbox.pending() === 0 || undefined, 10_000, 'every report delivered');
    const refs = execFileSync('git', ['-C', bare, 'for-each-ref', '--format=%(refname)', 'refs/keystone-rollout/'], {
      env: GIT_ENV,
    })
      .toString()
      .split('\n')
      .filter(Boolean);
    // What the device runs is C3, successfully; it holds nothing.
    expect(refs).toEqual([rolloutRef({ wave: 'canary', device: 'dev-a', commit: C3, state: 'success' })]);
  });
});
