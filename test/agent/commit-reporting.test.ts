// The statuses the agent hands to the outbox for each moment of a commit (SPEC §8), from its own events.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { AgentEventMap } from '../../src/agent/agent.js';
import { reportCommitStatuses } from '../../src/agent/commit-reporting.js';
import type { CommitStatus } from '../../src/status/commit-status.js';

const C1 = 'a'.repeat(40);
const C2 = 'b'.repeat(40);
const plan = { stopOrder: ['web', 'api'], startOrder: ['api', 'web'], noTouch: ['influxdb', 'telemetry'], layers: [], reasons: {}, reasonCodes: {} };

function setup(extra: Partial<Parameters<typeof reportCommitStatuses>[0]> = {}) {
  const events = new EventEmitter<AgentEventMap>();
  const sent: CommitStatus[] = [];
  const r = reportCommitStatuses({ events, outbox: { enqueue: (s) => (sent.push(s), [sent.length]) }, context: 'keystone/edge-1', now: () => 1000, ...extra });
  return { events, sent, r };
}

describe('commit statuses from the agent', () => {
  it('pending with the dry run, then success, for a commit', () => {
    const { events, sent } = setup();
    events.emit('applying', { revision: C1, reconcile: plan as never });
    events.emit('revision', { revision: C1, outcome: 'success', durationMs: 5, summary: '2 started', reconcile: plan as never, failed: [] });
    expect(sent).toEqual([
      { commit: C1, state: 'pending', description: 'applying: start api, web; stop web, api; 2 unchanged', context: 'keystone/edge-1', at: 1000 },
      { commit: C1, state: 'success', description: 'applied: 4 components running', context: 'keystone/edge-1', at: 1000 },
    ]);
  });

  it('failure names what failed, with a suffix that survives the cut; error says why it was refused', () => {
    const { events, sent, r } = setup({ onFailure: () => '; rolled back to bbbbbbb' });
    events.emit('revision', { revision: C1, outcome: 'failure', durationMs: 5, summary: 'x', failed: [{ name: 'api', reason: 'not healthy within its start budget '.repeat(6) }] });
    events.emit('revision', { revision: C2, outcome: 'rejected', durationMs: 5, summary: 'KS_UNSIGNED: no signature' });
    r.rejected(C2, 'KS_HISTORY_REWRITE: does not descend from the last applied commit');
    expect(sent.map((s) => s.state)).toEqual(['failure', 'error', 'error']);
    expect(sent[0]!.description.length).toBeLessThanOrEqual(140);
    expect(sent[0]!.description).toMatch(/^failed: api \(not healthy/);
    expect(sent[0]!.description.endsWith('; rolled back to bbbbbbb')).toBe(true);
    expect(sent[1]!.description).toBe('rejected: KS_UNSIGNED: no signature');
    expect(sent[2]!.description).toMatch(/^rejected: KS_HISTORY_REWRITE/);
  });

  it('nothing for revisions that are not commits, for silent ones, or after close; no failure policy for them', () => {
    const asked: string[] = [];
    const { events, sent, r } = setup({ silent: (id) => id === C2, onFailure: (id) => (asked.push(id), '; rolled back') });
    events.emit('revision', { revision: 'manual:0123456789ab', outcome: 'failure', durationMs: 1, summary: 'x', failed: [] });
    events.emit('revision', { revision: C2, outcome: 'failure', durationMs: 1, summary: 'x', failed: [] });
    expect(asked).toEqual([]);
    events.emit('applying', { revision: 'dir:0123456789ab', reconcile: plan as never });
    events.emit('applying', { revision: 'manual:0123456789ab', reconcile: plan as never });
    events.emit('applying', { revision: C2, reconcile: plan as never });
    r.close();
    events.emit('applying', { revision: C1, reconcile: plan as never });
    expect(sent).toEqual([]);
  });
});
