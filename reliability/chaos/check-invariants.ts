// The invariants of issue 18, checked after every restart that is allowed to settle (and the store's two after every
// kill): the device converges to the newest accepted revision, with no duplicate process or container and no orphan;
// the store passes `PRAGMA integrity_check`; no commit status is lost from the outbox; the replay floor never moves
// back. And issue 27's two (outcome-invariants.ts): no success reported for a revision whose components were not all
// healthy, and no revision that failed reported success later. Each returns a result rather than throwing, so a run
// counts what held and reports everything that did not.
import { statusContext } from '../../src/report/commit-status.js';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import type { HistoryEntry } from '../../src/store/state-store.js';
import { is } from '../../test/support/agent-harness.js';
import { CANNOT_RELOAD, DEVICE, type ChaosAgent } from './chaos-agent.js';
import { GAUGE, type ChaosRepo, type Expected, type PushedCommit } from './chaos-repo.js';
import { viewDevice, type DeviceView } from './device-view.js';
import { reportsSigned, REPORTS_SIGNED, type IdentityLedger } from './report-invariants.js';
import { checkOutcomes, interrupted, OutcomeLedger, outcomeOf, type OutcomeResult } from './outcome-invariants.js';
import { integrityCheck, outboxRows, recentHistory, replayFloor } from './store-probe.js';

export { OutcomeLedger } from './outcome-invariants.js';

export interface InvariantResult {
  name:
    | 'converged'
    | 'no duplicates'
    | 'a held update lock keeps the revision waiting'
    | 'nothing of a waiting revision applied'
    | 'no orphans'
    | 'store integrity'
    | 'no status lost'
    | 'replay floor'
    | OutcomeResult['name']
    | typeof REPORTS_SIGNED;
  ok: boolean;
  detail?: string;
}

/** How many invariants a settle checks (and a kill: the store's two). */
export const SETTLED_CHECKS = 9;
export const KILL_CHECKS = 2;

const CONTEXT = statusContext(DEVICE);
/** unsettled()'s reasons that are about statuses: at the deadline they fail "no status lost", not "converged". */
export const STATUS_WAIT = 'status: ';
/** Issue 27: a restarted agent offered the revision it runs resumes it (no new apply, no new report) and says so. */
export const RESUMED = 'resumed the revision applied last';
const STATUS_OF: Record<string, Expected> = { success: 'success', failure: 'failure', rejected: 'error' };
/** The newest row that is an apply (not a refusal, not a recovery: those leave the applied revision's outcome as it was). */
const lastApply = (history: readonly HistoryEntry[]) =>
  history.find((e) => outcomeOf(e) !== 'rejected' && outcomeOf(e) !== 'recovered');

/**
 * The commit the device must run: the newest accepted one, except when the tip is refused and the device never took
 * that commit up (no apply or refusal of it in its history: a kill came before its apply began, and the refused tip
 * was pushed on top while the agent was down). A device follows the tip alone, so it then runs on the commit it
 * applied last, which must itself be an accepted commit of the branch (found by seed 20261203 at kill 489).
 */
export function wanted(repo: ChaosRepo, ca: ChaosAgent): PushedCommit {
  const want = repo.newestAccepted();
  if (repo.tip().expected !== 'error') return want;
  if (recentHistory(ca.h.stateDir, 200).some((e) => e.revision === want.id)) return want;
  const applied = ca.h.appliedRevision()?.id;
  return repo.pushed.find((c) => c.id === applied && c.expected !== 'error') ?? want;
}

/** What keeps the device from being settled, or undefined when it is: the newest accepted revision applied, everything running, the outbox empty. */
export function unsettled(repo: ChaosRepo, ca: ChaosAgent): string | undefined {
  if (!ca.agent || ca.agent.exit) return 'the agent is not running';
  // The store may look settled before the restarted agent has even loaded: it must have applied something itself
  // (the tip, or, when the tip is refused, the commit it applied last: see reloadApplied in src/agent/agent.ts), or
  // resumed the revision it runs (issue 27), or said that it cannot read that commit back (then what it adopted must
  // be whole: the checks below say if it is not).
  if (
    !ca.agent.lines(
      (l) => is.applyEnd(l) || l.msg === CANNOT_RELOAD || (typeof l.msg === 'string' && l.msg.startsWith(RESUMED)),
    ).length
  )
    return 'the restarted agent has not ended an apply (nor resumed the revision it runs) yet';
  const want = wanted(repo, ca);
  const applied = ca.h.appliedRevision()?.id;
  if (applied !== want.id) return `applied ${applied?.slice(0, 12)}, want ${want.id.slice(0, 12)} (${want.kind})`;
  const history = recentHistory(ca.h.stateDir, 50);
  if (history.some((e) => e.finishedAt === undefined)) return 'an apply is under way';
  const last = lastApply(history);
  if (last?.revision !== want.id || interrupted(last))
    return `the last apply is of ${last?.revision.slice(0, 12)} (${last?.summary})`;
  const tip = repo.tip();
  const refusal =
    tip.expected === 'error' ? history.find((e) => e.revision === tip.id && e.outcome === 'rejected') : undefined;
  if (tip.expected === 'error' && !refusal) return `the tip ${tip.id.slice(0, 12)} is not refused yet`;
  const records = ca.h.components();
  const names = records.map((c) => c.name).sort();
  if (names.join() !== repo.componentNames().join()) return `components ${names.join(', ')}`;
  // A sick revision leaves gauge running unhealthy (its apply failed, and nothing rolls it back): that is settled.
  const sick = want.model?.sick === true;
  const down = records.filter((c) => c.state !== 'running' && !(sick && c.name === GAUGE && c.state === 'unhealthy'));
  if (down.length)
    return `not running: ${down.map((c) => `${c.name} ${c.state}${c.reason ? ` (${c.reason})` : ''}`).join(', ')}`;
  // One read of the outbox: read apart, a status enqueued between "none open" and "the newest" passes as delivered.
  const outbox = outboxRows(ca.h.stateDir);
  const open = outbox.filter((r) => r.open).length;
  if (open) return `${STATUS_WAIT}${open} status(es) not delivered yet`;
  // The apply's end is logged before its status is written: wait for the status of the row the device ended on
  // (whether that status is the one it must end with is for the invariants to say, not a reason to wait).
  const reported = tip.expected === 'error' ? tip : want;
  const ended = refusal ?? last;
  const newest = outbox.filter((r) => r.commit === reported.id).at(-1);
  const state = STATUS_OF[outcomeOf(ended) ?? ''];
  if (!newest || newest.createdAt < ended.finishedAt! || newest.state !== state)
    return `${STATUS_WAIT}the status of ${reported.kind} ${reported.id.slice(0, 12)} for its ${ended.outcome} (history row ${ended.id}) is not written yet: the newest is ${newest?.state ?? 'none'}`;
  return undefined;
}

/** Polls unsettled() until it is clear; returns the last reason at the deadline. */
export async function waitSettled(repo: ChaosRepo, ca: ChaosAgent, deadlineMs: number): Promise<string | undefined> {
  const deadline = Date.now() + deadlineMs;
  let why: string | undefined;
  for (;;) {
    try {
      why = unsettled(repo, ca);
    } catch (e) {
      why = `the store cannot be read: ${(e as Error).message}`;
    }
    if (why === undefined || Date.now() > deadline) return why;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The store as the kill left it: sound, and its floor not below the highest seen. */
export function checkStore(stateDir: string, floor: { max: number }): InvariantResult[] {
  const integrity = integrityCheck(stateDir);
  const f = replayFloor(stateDir) ?? 0;
  const moved = f < floor.max;
  floor.max = Math.max(floor.max, f);
  return [
    {
      name: 'store integrity',
      ok: integrity.join() === 'ok',
      ...(integrity.join() !== 'ok' && { detail: integrity.slice(0, 5).join('; ') }),
    },
    { name: 'replay floor', ok: !moved, ...(moved && { detail: `the floor moved back from ${floor.max} to ${f}` }) },
  ];
}

/** Runs viewDevice, and once more after a second when it finds something: what a stop in progress shows is not a duplicate. */
async function persistentView(repo: ChaosRepo, ca: ChaosAgent): Promise<DeviceView> {
  const first = await viewDevice(repo, ca);
  if (!first.dead.length && !first.duplicates.length && !first.orphans.length) return first;
  await new Promise((r) => setTimeout(r, 1_000));
  return viewDevice(repo, ca);
}

function converged(repo: ChaosRepo, ca: ChaosAgent, view: DeviceView): InvariantResult {
  const want = wanted(repo, ca);
  const problems: string[] = [...view.dead];
  const last = lastApply(recentHistory(ca.h.stateDir, 50));
  if (last && STATUS_OF[last.outcome!] !== want.expected)
    problems.push(
      `${want.kind} ${want.id.slice(0, 12)} ended as ${last.outcome} (${last.summary}), want ${want.expected}`,
    );
  for (const c of ca.h.components()) {
    // A rolled-back composite runs its previous members: only a healthy commit's member versions are its own.
    if (c.name.startsWith('app/')) {
      if (want.expected === 'success' && c.name === 'app/api' && c.version !== want.model!.appVersion)
        problems.push(`app/api runs ${c.version}, want ${want.model!.appVersion}`);
      continue;
    }
    const v = want.model!.versions[c.name];
    if (c.version !== v) problems.push(`${c.name} runs ${c.version}, want ${v}`);
  }
  return { name: 'converged', ok: problems.length === 0, ...(problems.length && { detail: problems.join('; ') }) };
}

/**
 * No status lost: for each commit looked at, every outcome the store recorded (success, failure, refused; not an apply
 * cut short by a kill) has its status in the outbox, written after it; and the server's note shows the newest status
 * the outbox holds for the commit (everything was delivered, in order). The commit the device must end on shows its
 * expected state.
 */
async function statusesKept(
  repo: ChaosRepo,
  ca: ChaosAgent,
  commits: readonly PushedCommit[],
): Promise<InvariantResult> {
  const problems: string[] = [];
  const ids = new Set(commits.map((c) => c.id));
  const rows = outboxRows(ca.h.stateDir, ids);
  const history = recentHistory(ca.h.stateDir, 300).filter((e) => ids.has(e.revision));
  for (const c of commits) {
    const mine = rows.filter((r) => r.commit === c.id);
    // Its newest outcome (a recovery sends no status: the failure before it is what was reported).
    const finished = history.find(
      (e) => e.revision === c.id && e.outcome !== undefined && !interrupted(e) && outcomeOf(e) !== 'recovered',
    );
    const note = (await readStatusNotes(repo.bare, c.id)).find((l) => l.context === CONTEXT);
    if (finished) {
      const state = STATUS_OF[finished.outcome!]!;
      if (!mine.some((r) => r.state === state && r.createdAt >= finished.finishedAt!))
        problems.push(
          `${c.kind} ${c.id.slice(0, 12)}: recorded ${finished.outcome} at ${finished.finishedAt}, but no ${state} status in the outbox after it (${mine.map((r) => r.state).join(', ') || 'none'})`,
        );
    }
    const newest = mine.at(-1);
    if (newest && note?.state !== newest.state)
      problems.push(
        `${c.kind} ${c.id.slice(0, 12)}: the note says ${note?.state ?? 'nothing'}, the outbox's newest status is ${newest.state}`,
      );
  }
  const want = repo.tip().expected === 'error' ? repo.tip() : repo.newestAccepted();
  const note = (await readStatusNotes(repo.bare, want.id)).find((l) => l.context === CONTEXT);
  if (note?.state !== want.expected)
    problems.push(
      `${want.kind} ${want.id.slice(0, 12)}: the note says ${note?.state ?? 'nothing'}, want ${want.expected}`,
    );
  return { name: 'no status lost', ok: problems.length === 0, ...(problems.length && { detail: problems.join('; ') }) };
}

/**
 * Every invariant of a settled device (SETTLED_CHECKS of them); `commits`: those pushed since the last settled check
 * (their statuses are looked at); `ledger`: what the outcome invariants saw at the earlier settles of the run.
 */
export async function checkSettled(
  repo: ChaosRepo,
  ca: ChaosAgent,
  commits: readonly PushedCommit[],
  floor: { max: number },
  ledger = new OutcomeLedger(),
  identity: IdentityLedger = {},
): Promise<InvariantResult[]> {
  const view = await persistentView(repo, ca);
  const store = checkStore(ca.h.stateDir, floor);
  const applied = ca.h.appliedRevision();
  const floorNow = replayFloor(ca.h.stateDir) ?? 0;
  if (applied?.signedAt !== undefined && floorNow < applied.signedAt)
    store[1] = {
      name: 'replay floor',
      ok: false,
      detail: `the floor ${floorNow} is below the applied revision's signing time ${applied.signedAt}`,
    };
  return [
    converged(repo, ca, view),
    {
      name: 'no duplicates',
      ok: view.duplicates.length === 0,
      ...(view.duplicates.length && { detail: view.duplicates.join('; ') }),
    },
    {
      name: 'no orphans',
      ok: view.orphans.length === 0,
      ...(view.orphans.length && { detail: view.orphans.join('; ') }),
    },
    ...store,
    await statusesKept(repo, ca, commits),
    ...(await checkOutcomes(repo, ca, ledger)),
    await reportsSigned(repo, ca, commits, identity),
  ];
}
