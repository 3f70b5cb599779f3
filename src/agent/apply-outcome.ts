// An apply's outcome from what its steps found (engine.ts step 7): pure. `success` only when everything the revision
// asked for runs healthy (SPEC §5); outcomes.ts turns the result into rows and reports.
import type { DesiredState } from '../core/desired-state.js';
import type { Reconcile } from '../core/diff.js';
import { cutLine } from '../core/line-bound.js';
import type { ApplyFailure } from '../store/state-store.js';
import type { ExecutionResult } from './executor.js';
import { publishedFailures } from './given-values.js';

export interface ApplyResult {
  reconcile: Reconcile;
  execution: ExecutionResult;
  outcome: 'success' | 'failure';
  summary: string;
  /** What failed: started components, untouched ones not healthy, members of a composite rolled back. */
  failures: ApplyFailure[];
  /**
   * The same failures as a commit status may tell them (every reader of the repository sees it): each reason without
   * the values its component was given (given-values.ts). The device keeps `failures` as they are.
   */
  published: ApplyFailure[];
  /** The desired state the apply carried out (before a composite's rollback): what else is published is scrubbed against it. */
  desired?: DesiredState;
  /** The agent stopped during it: not an outcome (outcomes.ts keeps its row open for the next start). */
  interrupted: boolean;
}

export interface ApplySteps {
  desired: DesiredState;
  reconcile: Reconcile;
  execution: ExecutionResult;
  /** Untouched components not healthy (adoption.ts checkUntouched). */
  untouched: ApplyFailure[];
  /** Members of composites not healthy after the apply. */
  down: ReadonlyArray<{ name: string; reason: string }>;
  /** Composites rolled back to their previous members by this apply. */
  rolledBack: string[];
  /** Composites held at their previous members: this revision could not update them before. */
  held: string[];
  /** The agent is stopping. */
  stopping: boolean;
  /** Components this apply started healthy that are not running any more when it ends (a crash meanwhile). */
  crashedSince: ApplyFailure[];
}

export function applyOutcome(a: ApplySteps): ApplyResult {
  const { desired, reconcile, execution, untouched, down, rolledBack, held } = a;
  // A member left down by an earlier, cut-short update fails this apply only when its composite was rolled back.
  const groupOf = new Map(desired.components.map((c) => [c.name, c.group]));
  const failures = [...execution.failed, ...a.crashedSince];
  for (const d of [...untouched, ...down.filter((d) => rolledBack.includes(groupOf.get(d.name) ?? ''))])
    if (!failures.some((f) => f.name === d.name)) failures.push(d);
  // The agent stopping cut the apply short (its checks skipped, starts given up): not an outcome, whatever it found.
  const interrupted = a.stopping;
  const outcome = failures.length === 0 && held.length === 0 ? 'success' : 'failure';
  const heldText = held.length
    ? `${held.join(', ')} held at ${held.length === 1 ? 'its' : 'their'} previous members: this revision could not update ${held.length === 1 ? 'it' : 'them'}`
    : '';
  const text = interrupted
    ? 'interrupted: the agent stopped during this apply'
    : outcome === 'success'
      ? `${execution.started.length} started, ${execution.stopped.length} stopped, ${reconcile.noTouch.length} untouched`
      : `failed: ${[...failures.map((f) => `${f.name} (${f.reason})`), ...rolledBack.map((g) => `${g} rolled back to its previous members`), ...(heldText ? [heldText] : [])].join('; ')}`;
  // Each reason is bounded, but a summary of many is one line too: held to the same bound (its head names the first).
  const summary = cutLine(text);
  return {
    reconcile,
    execution,
    outcome,
    summary,
    failures,
    published: publishedFailures(failures, desired.components),
    desired,
    interrupted,
  };
}
