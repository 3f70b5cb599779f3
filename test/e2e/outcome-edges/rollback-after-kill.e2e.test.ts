// `--on-failure rollback` goes back to the last good commit even when the agent goes away right after the failure
// (SPEC §5; rollback-on-failure.ts, outcomes.ts resumed()). Issue 27's review found that a SIGTERM or a kill -9 landing
// between a commit's failure and the beginning of the rollback's apply (the rollback is offered asynchronously, and a
// stop drops what is queued) left the device on the failed commit for good: the restarted agent resumed it, its
// failure stood, and nothing asked for the rollback again. Pinned here: the restarted agent, resuming the failed
// commit, asks again what to do about its failure and rolls back; the failed commit is never reported `success`.
//
// A real agent following a real Git server (test/support/git-world.ts): A runs `a` healthy; B makes `a` never healthy.
import { describe, expect, it } from 'vitest';
import { until } from '../../support/composite-fixture.js';
import { appliesOf, failing, outcomes, RESTARTS, startsWith, withGitWorld } from '../../support/git-world.js';
import { sleeper } from '../../support/stack-fixture.js';

describe.concurrent(
  '--on-failure rollback, the agent stopped or killed just after the failure',
  { timeout: 180_000 },
  () => {
    for (const { how, down } of RESTARTS) {
      it(`after ${how} the restarted agent still rolls back to the last good commit, and the failed one stays failure`, async () => {
        await withGitWorld([sleeper('a')], async (w) => {
          const a = await w.push('A: good');
          const first = w.start(['--on-failure', 'rollback']);
          await w.noteSays(a, 'success');
          w.fx.components = [failing('a', '2.0.0')];
          const b = await w.push('B: never healthy');
          // Gone the moment B's failure is said: most likely before the rollback's apply has begun (the window the review found).
          await first.waitForLog((l) => l.revision === b && startsWith('apply failed')(l), 30_000, 0, 'B to fail');
          await down(first);

          const second = w.start(['--on-failure', 'rollback']);
          const backOnA = () =>
            w.h.appliedRevision()?.id === a &&
            w.h.component('a')?.state === 'running' &&
            w.h.component('a')?.version === '1.0.0';
          await until(backOnA, 30_000, 'the device back on A, a 1.0.0 running').catch((e: Error) => {
            throw new Error(`${e.message}\nhistory: ${outcomes(w.h).join(', ')}\n${second.tail(20)}`);
          });
          expect(
            appliesOf(w.h, b).map((e) => e.outcome),
            `B's applies; history: ${outcomes(w.h).join(', ')}`,
          ).toEqual(['failure']);
          await w.noteSays(b, 'failure');
          expect(await w.noted(b)).not.toContain('success');
        });
      });
    }
  },
);
