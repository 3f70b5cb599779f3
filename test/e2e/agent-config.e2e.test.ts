// The real agent (bin/keystone.js, which runs dist/) started from a configuration file: one `keystone init` wrote and
// an operator then edited, and one written by hand with paths relative to its own directory and a flag that wins over
// it. A file that does not validate stops the program with exit code 2 before anything is created.
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess, is, processesUnder } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const KEYSTONE = join(PROJECT_ROOT, 'bin', 'keystone.js');
let fx: StackFixture;
let base: string;
const agents: AgentProcess[] = [];

beforeAll(async () => {
  fx = await stackFixture({ signed: true, components: () => [sleeper('db')] });
  await fx.sign();
  base = mkdtempSync(join(tmpdir(), 'keystone-config-e2e-'));
  // The state directories are inside it: the components' unprivileged user must be able to pass through.
  chmodSync(base, 0o711);
});

afterEach(async () => {
  for (const a of agents.splice(0)) if (!a.exit) await a.kill9();
  for (const p of processesUnder(base)) process.kill(p.pid, 'SIGKILL');
});

afterAll(() => {
  fx?.cleanup();
  rmSync(base, { recursive: true, force: true });
});

function startAgent(args: string[]): AgentProcess {
  const agent = new AgentProcess(
    spawn(process.execPath, [KEYSTONE, 'agent', ...args], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env },
    }),
  );
  agents.push(agent);
  return agent;
}

/** Runs the agent until its first apply has ended, and returns its `agent started` line. */
async function runUntilApplied(agent: AgentProcess) {
  const end = await agent.waitForLog(is.applyEnd, 20_000, 0, 'the first apply');
  expect(end.msg, agent.tail()).toBe('all components running');
  return agent.waitForLog(is.msg('agent started'), 5_000, 0, 'agent started');
}

describe('keystone agent --config', () => {
  it('runs from the file keystone init wrote, once the operator has edited it', async () => {
    const file = join(base, 'init', 'etc', 'agent.toml');
    const stateDir = join(base, 'init', 'state');
    const init = spawnSync(
      process.execPath,
      [
        KEYSTONE,
        'init',
        '--config',
        file,
        '--dir',
        fx.dir,
        '--plan',
        fx.plan,
        '--trusted-key',
        fx.trustArgs[1]!,
        '--state-dir',
        stateDir,
      ],
      {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
      },
    );
    expect(init.status, init.stderr).toBe(0);
    appendFileSync(
      file,
      '\n# The operator\'s additions.\nlisten = "none"\nlog-format = "json"\nstop-on-exit = true\nsettle = "100ms"\ngrace = "3s"\nmax-backoff = "800ms"\n',
    );

    const agent = startAgent(['--config', file]);
    const started = await runUntilApplied(agent);
    expect(started).toMatchObject({ config: file, dir: fx.dir, plan: fx.plan, state_dir: stateDir });
    expect(agent.lines(is.msgIncludes('UNSIGNED'))).toEqual([]);
    expect((await agent.stop()).code, agent.tail()).toBe(0);
    // stop-on-exit = true came from the file: the component went with the agent.
    expect(agent.lines(is.msgIncludes('--stop-on-exit'))).toHaveLength(1);
    expect(processesUnder(stateDir)).toEqual([]);
  });

  it("takes the file's relative paths from its directory, and a flag on the command line wins over the file", async () => {
    const etc = join(base, 'relative', 'etc');
    mkdirSync(join(etc, 'keys'), { recursive: true });
    copyFileSync(fx.trustArgs[1]!, join(etc, 'keys', 'release.pub'));
    const file = join(etc, 'agent.toml');
    writeFileSync(
      file,
      `dir = ${JSON.stringify(relative(etc, fx.dir))}\nplan = ${JSON.stringify(fx.plan)}\ntrusted-key = ["keys/release.pub"]\nstate-dir = "state"\n` +
        'listen = "none"\nlog-format = "pretty"\nstop-on-exit = true\nsettle = "100ms"\ngrace = "3s"\n',
    );
    // The harness reads JSON lines: that the agent is followed at all shows --log-format json won over "pretty".
    const agent = startAgent(['--config', relative(PROJECT_ROOT, file), '--log-format', 'json']);
    const started = await runUntilApplied(agent);
    expect(started).toMatchObject({ config: file, dir: fx.dir, state_dir: join(etc, 'state') });
    expect(agent.rawLines).toEqual([]);
    expect((await agent.stop()).code, agent.tail()).toBe(0);
  });

  it('refuses a file that does not validate: exit 2, the file and the line, nothing created', () => {
    const etc = join(base, 'bad', 'etc');
    mkdirSync(etc, { recursive: true });
    const file = join(etc, 'agent.toml');
    writeFileSync(
      file,
      `dir = ${JSON.stringify(fx.dir)}\nallow-unsigned = true\nsettle = "soon"\nstate-dir = "state"\n`,
    );
    const r = spawnSync(process.execPath, [KEYSTONE, 'agent', '--config', file], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${file}:3: settle: "soon" is not a duration`);
    expect(r.stderr).toContain('[KS_BAD_DURATION]');
    expect(r.stdout).toBe('');
    expect(existsSync(join(etc, 'state'))).toBe(false);
  });
});
