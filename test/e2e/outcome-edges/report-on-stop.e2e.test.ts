// The outcome of an apply that ends while the agent stops is reported (SPEC §5; run-agent.ts close()). Issue 27's review
// found that an agent stopping (systemctl restart, a package upgrade) during an apply closed its Git source first,
// and with it the commit reports: an outcome written meanwhile was in the history and in no report, the next start
// resumed the commit (a restart re-reports nothing), and its note said `pending` for good. Now the agent stops looking,
// the apply in flight ends, the reports go out, and only then does reporting end. Pinned here, end to end: the commit
// whose apply the stop landed in is reported once, with its true outcome, and its note does not stay `pending`. A stop
// now cuts the apply short (no outcome: its row stays open, stop-during-apply.e2e.test.ts), so the outcome is written
// and reported by the next start, which finishes that row.
//
// A real agent following a real Git server (test/support/git-world.ts). The plan has `a` and `r`, whose TERM trap
// takes 4 s; the commit that removes r is being applied (r stopping) when the agent gets its SIGTERM.
import { describe, expect, it } from 'vitest';
import { is } from '../../support/agent-harness.js';
import { outboxDelivered, RESUMED, withGitWorld } from '../../support/git-world.js';
import { sleeper, type ComponentSpec } from '../../support/stack-fixture.js';

const slowStopper: ComponentSpec = {
  name: 'r',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', 'trap "sleep 4; exit 0" TERM; while :; do sleep 0.2; done'],
};

describe('a commit whose apply the agent stops during', { timeout: 180_000 }, () => {
  it('is reported with its true outcome once the next start finishes it: the note says success, not pending for good', async () => {
    await withGitWorld([sleeper('a'), slowStopper], async (w) => {
      const x1 = await w.push('a and r');
      const first = w.start(['--grace', '10s']);
      await w.noteSays(x1, 'success');
      const mark = first.mark();
      w.fx.remove('r');
      const x2 = await w.push('r removed');
      await first.waitForLog(
        is.state('r', 'stopping'),
        30_000,
        mark,
        'the apply of the commit that removes r to stop r',
      );
      await first.stop(30_000);
      const [open] = w.h.history().filter((e) => e.revision === x2);
      expect(open?.outcome, 'no outcome for the apply the stop cut short').toBeUndefined();

      const second = w.start(['--grace', '10s']);
      const end = await second.waitForLog(
        is.applyEnd,
        30_000,
        0,
        `the restarted agent to finish the apply of ${x2.slice(0, 12)}`,
      );
      expect(end.msg, 'the open apply is finished, not resumed').not.toMatch(new RegExp(`^${RESUMED}`));
      await w.noteSays(x2, 'success');
      expect(w.h.history().filter((e) => e.revision === x2)).toMatchObject([{ id: open!.id, outcome: 'success' }]);
      expect((await outboxDelivered(w.h, x2)).map((r) => r.state)).toEqual(['pending', 'success']);
      expect(await w.noted(x2), 'every status the server received for the commit').toEqual(['pending', 'success']);
    });
  });
});
