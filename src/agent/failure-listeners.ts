// What a failure's listeners are told and how Outcomes (outcomes.ts) asks them: apart because asking writes nothing —
// Outcomes puts the answers in the failure's report and runs them once the failure is written.
import type { Logger } from '../log/logger.js';
import type { ApplyFailure } from '../store/state-store.js';

/** What a failure's listener is told; it may answer what the device does about it (`rolling back to 3f2a1c0`). */
export interface FailedOutcome {
  revision: string;
  summary: string;
  failed: ApplyFailure[];
}

/** `then` goes into the failure's report; `act` runs once the failure is written. */
export type FailureListener = (o: FailedOutcome) => { then: string; act?: () => void } | undefined;

/** Every listener's answer, in order; a listener that throws is logged and gives none. */
export function askFailureListeners(
  listeners: readonly FailureListener[],
  o: FailedOutcome,
  log: Logger,
): Array<{ then: string; act?: () => void }> {
  const answers: Array<{ then: string; act?: () => void }> = [];
  for (const l of listeners) {
    try {
      const a = l(o);
      if (a !== undefined) answers.push(a);
    } catch (e) {
      log.error({ err: e as Error, revision: o.revision }, 'a failure listener failed');
    }
  }
  return answers;
}
