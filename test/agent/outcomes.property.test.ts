// The rules of outcomes.ts under any sequence of applies, restarts, crashes and recoveries (fast-check over a real
// SQLite store; the engine's results are drawn, as the engine is tested on its own): a commit that failed on the device
// is never reported `success` afterwards, in the history or in the reports; at most one apply is ever open; a restart
// writes and reports nothing for the revision the device runs; a recovery is never a report.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEventMap } from '../../src/agent/agent-events.js';
import type { ApplyResult } from '../../src/agent/apply-outcome.js';
import { commitReports } from '../../src/agent/commit-reporting.js';
import { Outcomes } from '../../src/agent/outcomes.js';
import { createLogger } from '../../src/log/logger.js';
import type { CommitStatus } from '../../src/report/commit-status.js';
import { openStateStore, type StateStore } from '../../src/store/state-store.js';

const COMMITS = ['a', 'b', 'c'].map((x) => x.repeat(40));
const silentLog = createLogger({ pretty: false, write: () => undefined });
const reconcile = { stopOrder: [], startOrder: ['x'], noTouch: [], reasons: {}, reasonCodes: {}, layers: [] };

type Step =
  /** The source offers a commit; the engine's apply ends as drawn, or the agent dies before it ends. */
  | { kind: 'offer'; commit: number; result: 'success' | 'failure' | 'killed'; rollback: boolean }
  /** The agent starts again (after a kill or a stop): a new Outcomes over the same store. */
  | { kind: 'restart' }
  /** A component changes health while nothing applies: everything healthy, or not. */
  | { kind: 'health'; ok: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('offer' as const),
    commit: fc.integer({ min: 0, max: COMMITS.length - 1 }),
    result: fc.constantFrom('success' as const, 'failure' as const, 'killed' as const),
    rollback: fc.boolean(),
  }),
  fc.constant({ kind: 'restart' as const }),
  fc.record({ kind: fc.constant('health' as const), ok: fc.boolean() }),
);

function result(outcome: 'success' | 'failure'): ApplyResult {
  return {
    reconcile: reconcile as never,
    execution: {
      started: ['x'],
      stopped: [],
      failed: outcome === 'failure' ? [{ name: 'x', reason: 'not healthy' }] : [],
    },
    outcome,
    summary: outcome === 'success' ? '1 started' : 'failed: x (not healthy)',
    failures: outcome === 'failure' ? [{ name: 'x', reason: 'not healthy' }] : [],
    published: outcome === 'failure' ? [{ name: 'x', reason: 'not healthy' }] : [],
    interrupted: false,
  };
}

/** One device's run of `steps`: what the agent's spine asks of outcomes.ts, in the same order. */
function play(
  store: StateStore,
  steps: Step[],
): { sent: CommitStatus[]; events: Array<{ name: keyof AgentEventMap; revision: string }> } {
  const sent: CommitStatus[] = [];
  const events: Array<{ name: keyof AgentEventMap; revision: string }> = [];
  let healthy = true;
  let loaded: string | undefined;
  const start = () => {
    const o = new Outcomes({
      store,
      emit: (name, ...args) => events.push({ name, revision: (args[0] as { revision: string }).revision }),
      log: silentLog,
      now: Date.now,
      healthy: () => (loaded === undefined ? undefined : { ok: healthy, down: healthy ? [] : ['x'] }),
    });
    o.reportTo(
      commitReports({
        outbox: { enqueue: (s) => (sent.push(s), [sent.length]) },
        context: 'keystone/d',
        now: Date.now,
      }),
    );
    loaded = undefined;
    return o;
  };
  let o = start();
  for (const s of steps) {
    if (s.kind === 'restart') o = start();
    else if (s.kind === 'health') {
      healthy = s.ok;
      if (s.ok) o.checkRecovery();
    } else {
      const id = COMMITS[s.commit]!;
      const info = { id, source: 'git', planFile: 'plans/p.toml', identity: 'i', unsigned: true };
      const standing = o.standing({ id, rollback: s.rollback }, { identity: 'i', loaded: loaded === id });
      if (standing.kind === 'current' || standing.kind === 'failed-before') continue;
      if (standing.kind === 'resume') {
        loaded = id;
        healthy = s.result === 'success';
        o.resumed(info, standing.outcome, result(healthy ? 'success' : 'failure'));
        continue;
      }
      const ticket = o.begin(info, reconcile as never, standing, s.rollback, Date.now());
      if (s.result === 'killed') {
        o = start();
        continue;
      }
      loaded = id;
      healthy = s.result === 'success';
      o.finish(ticket, result(s.result));
    }
  }
  return { sent, events };
}

describe('outcomes under any sequence of applies, restarts, kills and recoveries', () => {
  it('never a success after a failure of the same commit, at most one open apply, recoveries never reported', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) => {
        const dir = mkdtempSync(join(tmpdir(), 'keystone-outcomes-'));
        const store = openStateStore(dir);
        try {
          const { sent } = play(store, steps);
          const rows = store.history({ limit: 1000 }).reverse();
          expect(rows.filter((r) => r.outcome === undefined).length).toBeLessThanOrEqual(1);
          for (const c of COMMITS) {
            // The history: after a failure the device saw (not an apply a stop cut short), no success of it.
            const mine = rows.filter(
              (r) => r.revision === c && r.outcome !== undefined && !r.summary?.startsWith('interrupted'),
            );
            const firstFailure = mine.findIndex((r) => r.outcome === 'failure');
            if (firstFailure >= 0) expect(mine.slice(firstFailure).map((r) => r.outcome)).not.toContain('success');
            // The reports: the same, and a recovery is never one.
            const reports = sent.filter((r) => r.commit === c).map((r) => r.state);
            const failedAt = reports.indexOf('failure');
            if (failedAt >= 0) expect(reports.slice(failedAt)).not.toContain('success');
          }
          // Every `recovered` row follows a failure of its revision, and every success report has its success row.
          for (const r of rows.filter((x) => x.outcome === 'recovered'))
            expect(rows.some((f) => f.revision === r.revision && f.outcome === 'failure' && f.id < r.id)).toBe(true);
          for (const s of sent.filter((x) => x.state === 'success'))
            expect(rows.some((r) => r.revision === s.commit && r.outcome === 'success')).toBe(true);
        } finally {
          store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a failed revision found healthy after a restart is recovered once, with no report; its failure stands', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keystone-outcomes-'));
    const store = openStateStore(dir);
    try {
      const steps: Step[] = [{ kind: 'offer', commit: 0, result: 'failure', rollback: false }];
      for (let i = 0; i < 3; i++)
        steps.push({ kind: 'restart' }, { kind: 'offer', commit: 0, result: 'success', rollback: false });
      const { sent, events } = play(store, steps);
      expect(store.history({ limit: 100 }).map((r) => r.outcome)).toEqual(['recovered', 'failure']);
      expect(sent.map((s) => s.state)).toEqual(['pending', 'failure']);
      expect(events.filter((e) => e.name === 'recovered')).toHaveLength(1);
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a restart writes and reports nothing for the revision the device runs, whatever its outcome', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('success' as const, 'failure' as const),
        fc.integer({ min: 1, max: 5 }),
        (first, restarts) => {
          const dir = mkdtempSync(join(tmpdir(), 'keystone-outcomes-'));
          const store = openStateStore(dir);
          try {
            const steps: Step[] = [{ kind: 'offer', commit: 0, result: first, rollback: false }];
            // After each restart the components are as they were: the resume finds the same health.
            for (let i = 0; i < restarts; i++)
              steps.push({ kind: 'restart' }, { kind: 'offer', commit: 0, result: first, rollback: false });
            const { sent, events } = play(store, steps);
            expect(store.history({ limit: 100 }).map((r) => r.outcome)).toEqual([first]);
            expect(sent.map((s) => s.state)).toEqual(['pending', first]);
            expect(events.filter((e) => e.name === 'resumed')).toHaveLength(restarts);
          } finally {
            store.close();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 20 },
    );
  });
});
