// Issue 27's invariants (SPEC §5, "Outcomes are the truth, across restarts"), checked after every restart that settles:
//
//   success only when healthy   No report says `success` for a revision whose components were not all healthy when it
//                               was made. Each success recorded since the last look (a history row, at its finishedAt;
//                               a status in the outbox, at its createdAt) is held against the components as the store
//                               has them now: one that is not running now, and has not changed state since before the
//                               success (its record's `since` is earlier), was not running when the success was made.
//                               And when the device settles on a success (the newest apply row), every component runs.
//                               A component an operator holds stopped is not counted (SPEC §5's one exception).
//   failure stays failure       No revision that failed on this device (a `failure` history row that is not an apply
//                               cut short, or a `failure` status enqueued or delivered) is ever said `success` after it:
//                               not by a later history row, not by a later status in the outbox, not by the device's
//                               line of its Git note, not by a rollout ref of the device. `recovered` rows (every
//                               component of a failed revision became healthy later) are allowed: they are not
//                               successes, and send nothing.
//
// The failures seen stay in a ledger for the whole run (the store prunes its history; a failure seen 500 kills ago still
// counts), and each history row and outbox row is looked at once, in the order they were written.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { statusContext } from '../../src/report/commit-status.js';
import { parseRolloutRef, ROLLOUT_PREFIX } from '../../src/report/rollout-refs.js';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import type { ComponentRecord, HistoryEntry } from '../../src/store/state-store.js';
import { GIT_ENV } from '../../test/support/git-env.js';
import { DEVICE, type ChaosAgent } from './chaos-agent.js';
import type { ChaosRepo } from './chaos-repo.js';
import { historySince, outboxRows, recentHistory } from './store-probe.js';

const run = promisify(execFile);
const CONTEXT = statusContext(DEVICE);

export const SUCCESS_ONLY_WHEN_HEALTHY = 'success only when healthy';
export const FAILURE_STAYS_FAILURE = 'failure stays failure';

export interface OutcomeResult {
  name: typeof SUCCESS_ONLY_WHEN_HEALTHY | typeof FAILURE_STAYS_FAILURE;
  ok: boolean;
  detail?: string;
}

/** What the outcome invariants remember between settles. */
export class OutcomeLedger {
  /** Revision → where its failure was first seen. */
  readonly failed = new Map<string, string>();
  /** The newest history row and outbox row looked at. */
  historyId = 0;
  outboxId = 0;
}

/** The outcome as a plain string: `recovered` is newer than some stores' type of it. */
export const outcomeOf = (e: HistoryEntry): string | undefined => e.outcome;
/** An apply cut short by a kill or a stop (today's code finishes it `failure`, "interrupted: …"): no outcome of the revision. */
export const interrupted = (e: HistoryEntry): boolean => e.summary?.startsWith('interrupted') === true;
/** A row that is an apply's outcome (not a refusal, not a recovery), finished and not cut short. */
export const isApplyOutcome = (e: HistoryEntry): boolean =>
  (outcomeOf(e) === 'success' || outcomeOf(e) === 'failure') && !interrupted(e);

const short = (id: string) => id.slice(0, 12);
const iso = (ms: number) => new Date(ms).toISOString();
/** SPEC §5's one exception: a component an operator holds stopped (`keystonectl stop`). */
const operatorHeld = (c: ComponentRecord) => c.held && c.state === 'stopped';
const describeDown = (cs: readonly ComponentRecord[]) =>
  cs.map((c) => `${c.name} ${c.state} since ${iso(c.since)}${c.reason ? ` (${c.reason})` : ''}`).join(', ');

/** The device's rollout refs on the server: commit → states. */
async function rolloutStates(bare: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const { stdout } = await run(
    'git',
    ['--git-dir', bare, 'for-each-ref', '--format=%(refname)', ROLLOUT_PREFIX.replace(/\/$/, '')],
    { env: GIT_ENV },
  );
  for (const name of stdout.split('\n').filter(Boolean)) {
    const r = parseRolloutRef(name);
    if (r?.device === DEVICE) out.set(r.commit, [...(out.get(r.commit) ?? []), r.state]);
  }
  return out;
}

/** Both outcome invariants on a settled device; `ledger` carries what earlier settles saw. */
export async function checkOutcomes(repo: ChaosRepo, ca: ChaosAgent, ledger: OutcomeLedger): Promise<OutcomeResult[]> {
  const stateDir = ca.h.stateDir;
  const records = ca.h.components();
  const unhealthy: string[] = [];
  const turned: string[] = [];
  /** Components not running now that have not changed state since before `at`: not running at `at` either. */
  const downAt = (at: number) => records.filter((c) => c.state !== 'running' && !operatorHeld(c) && c.since < at);

  // What was written since the last look, in the order it was written: a row is finished before its status is enqueued.
  type Event = { at: number; order: number } & (
    { kind: 'row'; e: HistoryEntry } | { kind: 'status'; id: number; commit: string; state: string; delivered: boolean }
  );
  const events: Event[] = [];
  const rows = historySince(stateDir, ledger.historyId);
  for (const e of rows) {
    // An apply under way (none at a settle): it and what follows are looked at next time.
    if (e.finishedAt === undefined) break;
    ledger.historyId = e.id;
    events.push({ at: e.finishedAt, order: 0, kind: 'row', e });
  }
  const touched = new Set<string>();
  for (const r of outboxRows(stateDir)) {
    if (r.id <= ledger.outboxId) continue;
    ledger.outboxId = r.id;
    touched.add(r.commit);
    events.push({
      at: r.createdAt,
      order: 1,
      kind: 'status',
      id: r.id,
      commit: r.commit,
      state: r.state,
      delivered: r.deliveredAt !== undefined,
    });
  }
  events.sort((a, b) => a.at - b.at || a.order - b.order);
  const reportedRows = new Set<number>();
  for (const ev of events) {
    if (ev.kind === 'row') {
      const { e } = ev;
      const o = outcomeOf(e);
      if (o === 'failure' && !interrupted(e) && !ledger.failed.has(e.revision))
        ledger.failed.set(e.revision, `its failure in history row ${e.id} at ${iso(e.finishedAt!)} (${e.summary})`);
      if (o !== 'success') continue;
      const first = ledger.failed.get(e.revision);
      if (first)
        turned.push(
          `${short(e.revision)}: history row ${e.id} says success at ${iso(e.finishedAt!)} (${e.summary}), after ${first}`,
        );
      const down = downAt(e.finishedAt!);
      if (down.length) {
        unhealthy.push(
          `${short(e.revision)}: history row ${e.id} says success at ${iso(e.finishedAt!)} (${e.summary}) while ${describeDown(down)}`,
        );
        reportedRows.add(e.id);
      }
    } else {
      if (ev.state === 'failure' && !ledger.failed.has(ev.commit))
        ledger.failed.set(ev.commit, `its failure status ${ev.id} at ${iso(ev.at)}`);
      if (ev.state !== 'success') continue;
      const how = `status ${ev.id} in the outbox (${ev.delivered ? 'delivered' : 'not delivered yet'}) says success at ${iso(ev.at)}`;
      const first = ledger.failed.get(ev.commit);
      if (first) turned.push(`${short(ev.commit)}: ${how}, after ${first}`);
      const down = downAt(ev.at);
      if (down.length) unhealthy.push(`${short(ev.commit)}: ${how} while ${describeDown(down)}`);
    }
  }

  // The success the device settled on: every component runs now.
  const last = recentHistory(stateDir, 50).find(isApplyOutcome);
  if (last && outcomeOf(last) === 'success' && !reportedRows.has(last.id)) {
    const down = records.filter((c) => c.state !== 'running' && !operatorHeld(c));
    if (down.length)
      unhealthy.push(
        `${short(last.revision)}: the device settled on its success (history row ${last.id}, ${last.summary}) with ${describeDown(down)}`,
      );
  }

  // The server's view of every failed revision whose reports moved since the last look: its note line, its rollout refs.
  for (const [commit, first] of ledger.failed) {
    if (!touched.has(commit)) continue;
    const note = (await readStatusNotes(repo.bare, commit)).find((l) => l.context === CONTEXT);
    if (note?.state === 'success')
      turned.push(
        `${short(commit)}: the device's line of its Git note says success (${note.description}), after ${first}`,
      );
  }
  const refs = await rolloutStates(repo.bare);
  for (const [commit, states] of refs) {
    const first = ledger.failed.get(commit);
    if (first && states.includes('success'))
      turned.push(`${short(commit)}: the device's rollout ref says success, after ${first}`);
  }

  return [
    {
      name: SUCCESS_ONLY_WHEN_HEALTHY,
      ok: unhealthy.length === 0,
      ...(unhealthy.length && { detail: unhealthy.join('; ') }),
    },
    { name: FAILURE_STAYS_FAILURE, ok: turned.length === 0, ...(turned.length && { detail: turned.join('; ') }) },
  ];
}
