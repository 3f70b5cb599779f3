// The statuses outcomes.ts hands to the outbox for each moment of a commit (SPEC §8).
import { describe, expect, it } from 'vitest';
import { commitReports, type CommitReportingOptions } from '../../src/agent/commit-reporting.js';
import type { CommitStatus } from '../../src/report/commit-status.js';

const C1 = 'a'.repeat(40);
const C2 = 'b'.repeat(40);
const plan = {
  stopOrder: ['web', 'api'],
  startOrder: ['api', 'web'],
  noTouch: ['influxdb', 'telemetry'],
  layers: [],
  reasons: {},
  reasonCodes: {},
};

function setup(extra: Partial<CommitReportingOptions> = {}) {
  const sent: CommitStatus[] = [];
  const r = commitReports({
    outbox: { enqueue: (s) => (sent.push(s), [sent.length]) },
    context: 'keystone/edge-1',
    now: () => 1000,
    ...extra,
  });
  return { sent, r };
}

describe('commit statuses from outcomes', () => {
  it('pending with the dry run, then success, for a commit', () => {
    const { sent, r } = setup();
    r.applying({ revision: C1, reconcile: plan as never });
    r.finished({
      revision: C1,
      outcome: 'success',
      durationMs: 5,
      summary: '2 started',
      reconcile: plan as never,
      failed: [],
    });
    expect(sent).toEqual([
      {
        commit: C1,
        state: 'pending',
        description: 'applying: start api, web; stop web, api; 2 unchanged',
        context: 'keystone/edge-1',
        at: 1000,
      },
      {
        commit: C1,
        state: 'success',
        description: 'applied: 4 components running',
        context: 'keystone/edge-1',
        at: 1000,
      },
    ]);
  });

  it('failure names what failed, with what the device does about it surviving the cut; error says why it was refused', () => {
    const { sent, r } = setup();
    r.finished({
      revision: C1,
      outcome: 'failure',
      durationMs: 5,
      summary: 'x',
      failed: [{ name: 'api', reason: 'not healthy within its start budget '.repeat(6) }],
      then: 'rolled back to bbbbbbb',
    });
    r.finished({ revision: C2, outcome: 'rejected', durationMs: 5, summary: 'KS_UNSIGNED: no signature' });
    r.refused(C2, 'KS_HISTORY_REWRITE: does not descend from the last applied commit');
    expect(sent.map((s) => s.state)).toEqual(['failure', 'error', 'error']);
    expect(sent[0]!.description.length).toBeLessThanOrEqual(140);
    expect(sent[0]!.description).toMatch(/^failed: api \(not healthy/);
    expect(sent[0]!.description.endsWith('; rolled back to bbbbbbb')).toBe(true);
    expect(sent[1]!.description).toBe('rejected: KS_UNSIGNED: no signature');
    expect(sent[2]!.description).toMatch(/^rejected: KS_HISTORY_REWRITE/);
  });

  it('a failure of no component (an agent update put back) says its coded reason; one without a code says the apply failed', () => {
    const { sent, r } = setup();
    r.finished({
      revision: C1,
      outcome: 'failure',
      durationMs: 5,
      summary: 'KS_AGENT_UPDATE_FAILED: agent 0.3.0 was put back on this device: the new agent did not come up',
      failed: [],
    });
    r.finished({ revision: C2, outcome: 'failure', durationMs: 5, summary: 'interrupted', failed: [] });
    expect(sent.map((s) => [s.state, s.description])).toEqual([
      [
        'failure',
        'failed: KS_AGENT_UPDATE_FAILED: agent 0.3.0 was put back on this device: the new agent did not come up',
      ],
      ['failure', 'apply failed'],
    ]);
  });

  it('nothing for revisions that are not commits', () => {
    const { sent, r } = setup();
    r.finished({ revision: 'manual:0123456789ab', outcome: 'failure', durationMs: 1, summary: 'x', failed: [] });
    r.applying({ revision: 'dir:0123456789ab', reconcile: plan as never });
    r.applying({ revision: 'manual:0123456789ab', reconcile: plan as never });
    r.held({ revision: 'dir:0123456789ab', wave: 'canary', reason: 'held', halted: false });
    expect(sent).toEqual([]);
  });

  it('a wave goes with the report as a rollout ref, keeping what the device keeps but the commit itself', () => {
    const { sent, r } = setup({ rolloutKeep: () => [C1, C2] });
    r.held({ revision: C1, wave: 'early', reason: 'held: waiting for wave canary (0 of 1 successes)', halted: false });
    r.held({ revision: C1, wave: 'early', reason: 'halted: canary failed', halted: true });
    expect(sent.map((s) => [s.state, s.rollout])).toEqual([
      ['pending', { wave: 'early', state: 'held', keep: [C2] }],
      ['error', { wave: 'early', state: 'halted', keep: [C2] }],
    ]);
  });

  it('waiting for an update lock or a maintenance window: pending with the reason; in a wave, held (the gate counts it as neither a success nor a failure)', () => {
    const { sent, r } = setup({ rolloutKeep: () => [C2] });
    r.waiting({ revision: C1, reason: 'held: api holds its update lock' });
    r.waiting({
      revision: C2,
      wave: 'early',
      reason: 'held: outside the maintenance window (opens Tue 02:00 Europe/Berlin, in 3h12m)',
    });
    expect(sent.map((s) => [s.state, s.description, s.rollout])).toEqual([
      ['pending', 'held: api holds its update lock', undefined],
      [
        'pending',
        'held: outside the maintenance window (opens Tue 02:00 Europe/Berlin, in 3h12m)',
        { wave: 'early', state: 'held', keep: [] },
      ],
    ]);
  });
});
