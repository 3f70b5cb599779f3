// Issue 13, finding 3, through the real agent: a process whose recipe names no user runs as the device's unprivileged
// default (it used to run as root with its capabilities emptied, and uid 0 still owned every root file); a root
// user is refused before anything runs unless the device allows it (--allow-root); and a state directory that run
// users cannot traverse is said at once, with what to do, instead of a component crash-looping on "Cannot find module".
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processUid } from '../../src/runtime/proc-identity.js';
import { AgentHarness, is } from '../support/agent-harness.js';
import { needs } from '../support/requirements.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

/** The agent switches users (setpriv) only as root. */
const root = needs('root');

/** The real uid of a live process, from /proc. */
const uidOf = (pid: number): number => processUid(pid)!;

describe.skipIf(root.skip)(root.title('process users through the agent (as root)'), { timeout: 60_000 }, () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  const world = async (
    components: () => ReturnType<typeof sleeper>[],
  ): Promise<{ fx: StackFixture; h: AgentHarness }> => {
    const fx = await stackFixture({ signed: false, components });
    const h = new AgentHarness();
    cleanups.push(
      () => fx.cleanup(),
      () => h.cleanup(),
    );
    return { fx, h };
  };

  it('no user: the default unprivileged user (nobody here), not root; user = "root" refuses the revision, naming --allow-root', async () => {
    const { fx, h } = await world(() => [sleeper('plain')]);
    const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
    expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    const pid = h.pidsOf().plain!;
    expect(uidOf(pid)).toBe(65534);

    const mark = agent.mark();
    fx.add({ ...sleeper('rooty'), user: 'root' });
    const rev = await fx.revisionId();
    const refusal = await agent.waitForLog(
      is.revision(rev, 'revision refused; still running the previous one'),
      15_000,
      mark,
      'the refusal',
    );
    expect(refusal.reason).toContain(`${fx.recipePath('rooty')}: lifecycle.run.security.user`);
    expect(refusal.reason).toContain('--allow-root');
    expect(refusal.reason).toContain('[KS_ROOT_NOT_PERMITTED]');
    expect(h.component('rooty')).toBeUndefined();
    expect(h.pidsOf().plain).toBe(pid);
  });

  it('the second review: a docker-group user and a uid of (uid_t)-1 were root in all but name; both refuse the revision', async () => {
    const { fx, h } = await world(() => [sleeper('plain')]);
    const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
    expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    const hasDockerGroup = /^docker:/m.test(readFileSync('/etc/group', 'utf8'));
    if (hasDockerGroup) {
      const mark = agent.mark();
      fx.add({ ...sleeper('dockery'), user: 'nobody:docker' });
      const refusal = await agent.waitForLog(
        is.revision(await fx.revisionId(), 'revision refused; still running the previous one'),
        15_000,
        mark,
        'the refusal',
      );
      expect(refusal.reason).toMatch(
        /dockery.*member of group \d+, which is root in all but name.*\[KS_ROOT_NOT_PERMITTED\]/,
      );
      fx.remove('dockery');
    }
    const mark = agent.mark();
    fx.add({ ...sleeper('minusone'), user: '4294967295:4294967295' });
    const refusal = await agent.waitForLog(
      is.revision(await fx.revisionId(), 'revision refused; still running the previous one'),
      15_000,
      mark,
      'the refusal',
    );
    expect(refusal.reason).toContain(`${fx.recipePath('minusone')}:`);
    expect(refusal.reason).toContain('at most 2147483646');
    expect(h.component('minusone')).toBeUndefined();
  });

  it('with --allow-root the device lets a recipe run as root', async () => {
    const { fx, h } = await world(() => [{ ...sleeper('rooty'), user: 'root' }]);
    const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--allow-root'] });
    expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    const pid = h.pidsOf().rooty!;
    expect(uidOf(pid)).toBe(0);

    // The device stops allowing root: the adopted root process is named at start (and the revision is refused).
    await agent.stop();
    const next = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
    const warning = await next.waitForLog(
      (l) => l.component === 'rooty' && typeof l.msg === 'string' && l.msg.startsWith('runs as root'),
      15_000,
      0,
      'the warning',
    );
    expect(warning.pid).toBe(pid);
    await next.waitForLog(is.msg('revision refused; still running the previous one'), 15_000, 0, 'the refusal');
  });

  it('a state directory inside a directory run users cannot traverse (a checkout in /root): refused at once, saying what to do', async () => {
    const { fx, h } = await world(() => [sleeper('plain')]);
    const locked = mkdtempSync(join(tmpdir(), 'keystone-locked-'));
    chmodSync(locked, 0o700);
    cleanups.push(() => rmSync(locked, { recursive: true, force: true }));
    const stateDir = join(locked, 'state');
    mkdirSync(stateDir);
    const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--state-dir', stateDir] });
    const refusal = await agent.waitForLog(
      is.msg('revision refused; still running the previous one'),
      30_000,
      0,
      'the refusal',
    );
    expect(refusal.reason).toContain('[KS_WORK_DIR_UNREACHABLE]');
    expect(refusal.reason).toContain(`${locked} (mode 0700)`);
    expect(refusal.reason).toContain('--state-dir');
    expect(agent.lines((l) => l.state !== undefined)).toEqual([]);
  });
});
