// A pack bomb on the followed branch (issue 28, finding 3), against the real agent with its default limits and a real
// `git http-backend`: a signed commit carrying, beside the signed files, an unsigned 256 MiB file of zeros (a few
// hundred kilobytes in the pack). The agent used to fetch it, inflate it several times over to index and read it
// (an agent went from 100 MiB to 4.2 GiB with 1 GiB of zeros) and apply the commit all the same. Now the fetch is
// refused from the object's header (KS_GIT_PACK_TOO_LARGE, at every look), the agent's peak memory (VmHWM) stays
// below the size of the file, the device keeps running what it ran, and the next commit without the file is applied.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '../support/composite-fixture.js';
import { withGitWorld } from '../support/git-world.js';
import { sleeper } from '../support/stack-fixture.js';

const MiB = 1024 * 1024;
const BOMB = 256 * MiB;

/** The agent's peak resident memory so far, from /proc (Linux). */
function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

describe('a pack bomb on the followed branch', { timeout: 180_000 }, () => {
  it('is refused at the fetch with KS_GIT_PACK_TOO_LARGE, the agent stays small, and the next commit applies', async () => {
    await withGitWorld([sleeper('a')], async (w) => {
      const first = await w.push('first');
      const agent = w.start();
      await until(() => w.h.appliedRevision()?.id === first || undefined, 60_000, 'the first commit applied');

      // Signed as usual: SHA256SUMS lists the recipes and the plan, not the file beside them.
      writeFileSync(join(w.fx.dir, 'zeros.bin'), Buffer.alloc(BOMB));
      w.fx.bumpVersion('a', '2.0.0');
      const bomb = await w.push('a new version, and 256 MiB of zeros beside it');
      const mark = agent.mark();
      // Refused at every look (the first fetch, then its retries), each time from the header alone.
      await until(
        () => agent.lines((l) => l.code === 'KS_GIT_PACK_TOO_LARGE', mark).length >= 2 || undefined,
        60_000,
        `two refused fetches (log: ${agent.tail(6)})`,
      );
      const refused = agent.lines((l) => l.code === 'KS_GIT_PACK_TOO_LARGE', mark)[0]!;
      expect(String(refused.err)).toContain(`inflates to ${BOMB} bytes, over the limit of ${32 * MiB} an object`);
      expect(w.h.appliedRevision()?.id).toBe(first);
      expect(w.h.history().some((e) => e.revision === bomb)).toBe(false);
      const peak = peakRss(agent.pid);
      expect(peak, `VmHWM ${Math.round(peak / MiB)} MiB`).toBeLessThan(BOMB);

      // The fix: the file removed, a new signed commit. Applied, as if the bomb had never been pushed.
      rmSync(join(w.fx.dir, 'zeros.bin'));
      w.fx.bumpVersion('a', '2.0.1');
      const fixed = await w.push('without the zeros');
      await until(
        () => w.h.appliedRevision()?.id === fixed || undefined,
        60_000,
        `the commit without the bomb applied (log: ${agent.tail(6)})`,
      );
      await w.noteSays(fixed, 'success');
      expect(peakRss(agent.pid)).toBeLessThan(BOMB);
    });
  });
});
