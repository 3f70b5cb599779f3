// The device policy (SPEC §5) as an operator sees it, through a real agent: `keystonectl status` and GET /v1/revision
// show what the device allows, and `keystonectl apply-dry --agent` refuses a plan the device would refuse, naming the
// recipe, the TOML path and the flag, before it is pushed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { asContainer, freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

describe('the device policy through a running agent', { timeout: 60_000 }, () => {
  let fx: StackFixture;
  let other: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;
  let url: string;
  const ctl = (args: string[], cwd = fx.dir) => runCtl([...args, '--agent', url, '--state-dir', h.stateDir], cwd);

  beforeAll(async () => {
    fx = await stackFixture({ signed: false, components: () => [sleeper('plain')] });
    h = new AgentHarness();
    const [port] = await freePorts(1);
    url = `http://127.0.0.1:${port}`;
    agent = h.start({
      dir: fx.dir,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: ['--listen', `127.0.0.1:${port}`, '--allow-mount', '/srv/acme', '--allow-capability', 'net_admin'],
    });
    expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    await agent.waitForLog(is.msg('HTTP API listening'), 10_000, 0, 'the API');
    // A change under review, in a repository of its own (the agent does not follow it).
    other = await stackFixture({
      signed: false,
      components: () => [
        sleeper('plain'),
        { ...sleeper('rooty'), user: 'root' },
        asContainer('web', '1.0.0', {
          image: 'img:1',
          user: '65534:65534',
          privileged: true,
          mounts: [
            { source: '/srv/acme/www', target: '/www', read_only: true },
            { source: '/etc', target: '/etc2', read_only: true },
          ],
        }),
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
    other?.cleanup();
  });

  it('status prints the policy under the revision line; GET /v1/revision carries it', async () => {
    const r = await ctl(['status']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    // The agent's own line first (pid, version), then the revision, then the policy under it.
    expect(lines[0]).toMatch(/^agent pid \d+ /);
    expect(lines[1]).toMatch(/^revision /);
    expect(lines[2]).toBe(
      'policy: allows bind mounts under /srv/acme (--allow-mount); capability CAP_NET_ADMIN (--allow-capability)',
    );
    const json = JSON.parse((await ctl(['status', '--json'])).stdout) as {
      revision: { policy: Record<string, unknown> };
    };
    expect(json.revision.policy).toMatchObject({
      allowPrivileged: false,
      allowHostNamespaces: false,
      allowRoot: false,
      allowMounts: ['/srv/acme'],
      allowCapabilities: ['CAP_NET_ADMIN'],
      allowDevices: [],
    });
  });

  it('apply-dry --agent refuses what the device would refuse, with the recipe, the TOML path and the flag (exit 2)', async () => {
    const r = await ctl(['apply-dry', other.plan, '--allow-unsigned'], other.dir);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('  '));
    expect(lines).toEqual([
      expect.stringMatching(
        /^ {2}recipes\/rooty\.toml: lifecycle\.run\.security\.user: .*allow it with --allow-root.*\[KS_ROOT_NOT_PERMITTED\]$/,
      ),
      expect.stringMatching(
        /^ {2}recipes\/web\.toml: lifecycle\.run\.container\.privileged: .*allow it with --allow-privileged.*\[KS_CONTAINER_NOT_PERMITTED\]$/,
      ),
      expect.stringMatching(
        /^ {2}recipes\/web\.toml: lifecycle\.run\.container\.mounts\[1\]\.source: .*\/etc.*allows mounts under \/srv\/acme.*allow it with --allow-mount \/etc.*\[KS_MOUNT_NOT_PERMITTED\]$/,
      ),
    ]);
    const json = JSON.parse((await ctl(['apply-dry', other.plan, '--allow-unsigned', '--json'], other.dir)).stdout) as {
      error: { code: string; problems: Array<{ component: string; flag: string }> };
    };
    expect(json.error.code).toBe('KS_NOT_PERMITTED');
    expect(json.error.problems.map((p) => [p.component, p.flag])).toEqual([
      ['rooty', '--allow-root'],
      ['web', '--allow-privileged'],
      ['web', '--allow-mount /etc'],
    ]);
    // The device's own plan passes the same check: its reconcile is printed.
    const ok = await ctl(['apply-dry', fx.plan, '--allow-unsigned']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('no_touch=[plain]');
  });
});
