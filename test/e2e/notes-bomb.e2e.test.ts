// A device's notes ref overwritten with a huge notes commit (issue 28, finding 4), against the real agent with its
// default limits and a real `git http-backend`: anyone who can push puts a notes commit on top of the device's own
// ref whose tree holds a 256 MiB note of zeros (a few hundred kilobytes in the pack). The device's next report finds
// its push stale and fetched the server's tip whole: a 400 MB note took an agent to 2.7 GiB. Now the fetch is refused
// from the object's header (over the 64 MiB the recovery fetch may inflate), the agent's peak memory (VmHWM) stays
// below the size of the note, and the device replaces the ref with its own notes, afresh, saying so in its log.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { deviceNotesRef } from '../../src/report/device-notes-ref.js';
import { git, withGitWorld } from '../support/git-world.js';
import { sleeper } from '../support/stack-fixture.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const BOMB = 256 * MiB;

/** The agent's peak resident memory so far, from /proc (Linux). */
function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

describe('a notes bomb on the device notes ref', { timeout: 180_000 }, () => {
  it('is not read: the agent stays small, replaces the ref with its own notes afresh, logs KS_STATUS_NOTES_TOO_LARGE, and keeps reporting', async () => {
    await withGitWorld([sleeper('a')], async (w) => {
      const first = await w.push('first');
      const agent = w.start();
      await w.noteSays(first, 'success', 60_000);

      // The attack, straight in the server's repository: a notes commit on top of the device's, 256 MiB of zeros more.
      const ref = deviceNotesRef(w.device);
      const sh = async (script: string) => (await run('sh', ['-c', script], { cwd: w.bare })).stdout.trim();
      const blob = await sh(`head -c ${BOMB} /dev/zero | git hash-object -w --stdin`);
      const tip = await git(w.bare, 'rev-parse', ref);
      const tree = await sh(`(git ls-tree ${tip}; printf '100644 blob ${blob}\\t${'b'.repeat(40)}\\n') | git mktree`);
      const bomb = await sh(`git -c user.name=x -c user.email=x@x commit-tree ${tree} -p ${tip} -m 'not a report'`);
      await git(w.bare, 'update-ref', ref, bomb);

      // A change pushed without signing it: the device reports `error`, finds its push stale, and would fetch the bomb.
      const mark = agent.mark();
      w.fx.bumpVersion('a', '1.0.1');
      const unsigned = await w.push('unsigned', { sign: false });
      await w.noteSays(unsigned, 'error', 60_000);
      const said = await agent.waitForLog(
        (l) => l.code === 'KS_STATUS_NOTES_TOO_LARGE',
        10_000,
        mark,
        'the warning that the notes ref was replaced',
      );
      expect(said.level).toBe(40); // warn
      expect(String(said.msg)).toContain('replaced by its own line, started afresh');
      expect(String(said.msg)).toContain(`inflate to more than ${64 * MiB} bytes`);
      const peak = peakRss(agent.pid);
      expect(peak, `VmHWM ${Math.round(peak / MiB)} MiB`).toBeLessThan(BOMB);

      // The server's ref: the device's own notes (first's success, the unsigned commit's error) in one root commit.
      expect(await git(w.bare, 'rev-list', '--count', ref)).toBe('1');
      expect(await w.note(first)).toMatchObject({ state: 'success' });
      expect(await git(w.bare, 'ls-tree', '-r', '--name-only', ref)).not.toContain('b'.repeat(40));

      // And it keeps reporting, one request a report again: the next commit's notes arrive as usual.
      w.fx.bumpVersion('a', '2.0.0');
      const next = await w.push('next');
      await w.noteSays(next, 'success', 60_000);
      expect(await git(w.bare, 'rev-list', '--count', ref)).not.toBe('1');
      expect(peakRss(agent.pid)).toBeLessThan(BOMB);
    });
  });
});
