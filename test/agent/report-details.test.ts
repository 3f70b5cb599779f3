// What every status says beside its state (SPEC §8, issue 29): the agent's version and the device's health on every
// status, a failure's log lines on `failure` (from the units that failed, scrubbed against the desired state the apply
// carried out); and a part that cannot be read never stops the status.
import { describe, expect, it } from 'vitest';
import { commitReports, type CommitReportingOptions } from '../../src/agent/commit-reporting.js';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import type { CommitStatus } from '../../src/report/commit-status.js';
import { desired } from '../support/state-builder.js';

const C1 = 'a'.repeat(40);
const plan = { stopOrder: [], startOrder: ['api'], noTouch: [], layers: [], reasons: {}, reasonCodes: {} };
const HEALTH = { uptimeS: 10, load1: 0.5, memFreeBytes: 1024, diskFreeBytes: 2048 };

function setup(extra: Partial<CommitReportingOptions> = {}) {
  const sent: CommitStatus[] = [];
  let reads = 0;
  const r = commitReports({
    outbox: { enqueue: (s) => (sent.push(s), [sent.length]) },
    context: 'keystone/edge-1',
    now: () => 1000,
    agentVersion: '0.1.0',
    health: () => (reads++, HEALTH),
    ...extra,
  });
  return { sent, r, reads: () => reads };
}

describe('report details', () => {
  it('every status carries the version and the health read when it was decided; no log but on failure', () => {
    const { sent, r, reads } = setup({ failureLog: () => ['never: asked'] });
    r.applying({ revision: C1, reconcile: plan as never });
    r.held({ revision: C1, wave: 'early', reason: 'held', halted: false });
    r.finished({
      revision: C1,
      outcome: 'success',
      durationMs: 5,
      summary: 'ok',
      reconcile: plan as never,
      failed: [],
    });
    r.finished({ revision: C1, outcome: 'rejected', durationMs: 5, summary: 'KS_UNSIGNED: no signature' });
    r.refused(C1, 'KS_HISTORY_REWRITE: no');
    expect(sent.map((s) => s.details)).toEqual(Array.from({ length: 5 }, () => ({ agent: '0.1.0', health: HEALTH })));
    expect(reads()).toBe(5);
  });

  it('failure: the log lines of the units that failed, asked with the desired state the apply carried out', () => {
    const components = desired([{ name: 'api' }]).components as DesiredComponent[];
    const asked: Array<[readonly string[], readonly DesiredComponent[]]> = [];
    const { sent, r } = setup({ failureLog: (failed, cs) => (asked.push([failed, cs]), ['api: listen EADDRINUSE']) });
    r.finished({
      revision: C1,
      outcome: 'failure',
      durationMs: 5,
      summary: 'x',
      failed: [{ name: 'api', reason: 'exited with 1' }],
      components,
    });
    expect(asked).toEqual([[['api'], components]]);
    expect(sent[0]!.details).toEqual({ agent: '0.1.0', health: HEALTH, log: ['api: listen EADDRINUSE'] });
    // Nothing to say: no `log` at all.
    const quiet = setup({ failureLog: () => [] });
    quiet.r.finished({
      revision: C1,
      outcome: 'failure',
      durationMs: 5,
      summary: 'x',
      failed: [{ name: 'api', reason: 'r' }],
    });
    expect(quiet.sent[0]!.details).toEqual({ agent: '0.1.0', health: HEALTH });
  });

  it('a part that throws is left out and said; the status goes', () => {
    const errors: unknown[] = [];
    const { sent, r } = setup({
      health: () => {
        throw new Error('no /proc');
      },
      failureLog: () => {
        throw new Error('EACCES');
      },
      onDetailsError: (e) => errors.push(e),
    });
    r.finished({
      revision: C1,
      outcome: 'failure',
      durationMs: 5,
      summary: 'x',
      failed: [{ name: 'api', reason: 'r' }],
    });
    expect(sent.map((s) => [s.state, s.details])).toEqual([['failure', { agent: '0.1.0' }]]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['no /proc', 'EACCES']);
  });
});
