// The `settings` line: doctor runs the agent's own checks of its settings (cli/agent-flags.ts checkAgentFlags, then
// agent-settings.ts), so what `keystone agent` refuses with exit 2 fails doctor with the agent's very message and code:
// `--listen 0.0.0.0:8080` without --listen-public, `--window bogus`, a flag that undoes what the configuration file
// needs. It is the first line; the other checks still run. A good configuration passes it.
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAgentFlags } from '../../src/cli/agent-flags.js';
import { parseAgentOptions } from '../../src/cli/agent-options.js';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/keystone.js';
import { CHECK_IDS, type CheckResult } from '../../src/doctor/check-result.js';
import { checkSettings, settingsVerdict } from '../../src/doctor/settings-check.js';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';
import { scratch, type Scratch } from './doctor-fixtures.js';

let repo: ExampleRepo;
let s: Scratch;
let n = 0;
beforeAll(async () => {
  repo = await exampleRepo({ signed: false });
  s = scratch();
});
afterAll(() => {
  repo.cleanup();
  s.cleanup();
});

const io = (): CliIo & { out: () => string } => {
  let stdout = '';
  return {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: () => true },
    cwd: s.dir,
    env: process.env,
    now: Date.now,
    out: () => stdout,
  };
};

/** `keystone doctor ARGS --json`, in-process: its exit code and checks. */
async function doctor(args: string[]): Promise<{ code: number; checks: CheckResult[] }> {
  const cli = io();
  const code = await main(['doctor', ...args, '--json'], cli, { once: () => undefined });
  const checks = (JSON.parse(cli.out()) as Array<CheckResult & { fix: string; code: string | null }>).map(
    ({ code: c, fix, ...r }) => ({ ...r, ...(fix !== '' && { fix }), ...(c !== null && { code: c }) }),
  );
  return { code, checks };
}

/** The refusal of `keystone agent ARGS`, from the agent's own check of its flags (the agent is not started). */
function agentRefusal(args: string[]): { message: string; code: string } {
  const cli = io();
  try {
    checkAgentFlags(args, parseAgentOptions(args, cli), cli);
  } catch (e) {
    return { message: (e as Error).message, code: (e as { code: string }).code };
  }
  throw new Error(`keystone agent ${args.join(' ')} was not refused`);
}

const of = (checks: CheckResult[], id: string) => checks.find((c) => c.check === id)!;
/** A device's arguments over a copy of the example, apart from the one under test. */
const base = () => [
  '--dir',
  repo.dir,
  '--plan',
  'plans/edge-processes.toml',
  '--allow-unsigned',
  '--state-dir',
  join(s.dir, `state-${++n}`),
];

describe('settings: what `keystone agent` refuses to start with', () => {
  it('fails --listen 0.0.0.0:8080 without --listen-public, in the agent’s words, first; the other checks still run (exit 1)', async () => {
    const args = [...base(), '--listen', '0.0.0.0:8080'];
    const refusal = agentRefusal(args);
    expect(refusal.message).toBe(
      '--listen 0.0.0.0:8080 is not a loopback address: add --listen-public to expose the API beyond this machine',
    );
    const { code, checks } = await doctor(args);
    expect(code).toBe(1);
    expect(checks.map((c) => c.check)).toEqual([...CHECK_IDS]);
    expect(checks[0]).toMatchObject({
      check: 'settings',
      status: 'fail',
      detail: `keystone agent refuses to start (exit 2): ${refusal.message}`,
      code: refusal.code,
    });
    expect(checks[0]!.fix).toMatch(/^change that flag \(or its key in the configuration file\)/);
    // Doctor went on: the plan was read, the source checked.
    expect(of(checks, 'plan')).toMatchObject({
      status: 'pass',
      detail: `plans/edge-processes.toml (--plan) from directory ${repo.dir}: 4 components (4 processes)`,
    });
    expect(of(checks, 'source').status).toBe('pass');
    // With --listen-public the agent takes it, and so does doctor.
    expect(of((await doctor([...args, '--listen-public'])).checks, 'settings').status).toBe('pass');
  });

  it('fails --window bogus with the agent’s message', async () => {
    const args = [...base(), '--window', 'bogus'];
    const refusal = agentRefusal(args);
    expect(refusal.message).toMatch(/^--window: "bogus" is not a window/);
    const { code, checks } = await doctor(args);
    expect(code).toBe(1);
    expect(of(checks, 'settings')).toMatchObject({
      status: 'fail',
      detail: `keystone agent refuses to start (exit 2): ${refusal.message}`,
      code: refusal.code,
    });
    expect(of(checks, 'plan').status).toBe('pass');
  });

  it('refused settings do not stop the tip from being verified with the same trusted keys', async () => {
    const keygen = await runCtl(['keygen', '--out', join(s.dir, 'device'), '--no-password'], s.dir);
    expect(keygen.code, keygen.stderr).toBe(0);
    const args = [
      '--repo',
      repo.dir,
      '--plan',
      'plans/edge-processes.toml',
      '--trusted-key',
      join(s.dir, 'device.pub'),
      '--status',
      'none',
      '--state-dir',
      join(s.dir, `state-${++n}`),
      '--window',
      'bogus',
    ];
    const { checks } = await doctor(args);
    expect(of(checks, 'settings')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('--window: "bogus" is not a window'),
    });
    expect(of(checks, 'first-revision')).toMatchObject({ status: 'fail', code: 'KS_UNSIGNED' });
  });

  it('fails a flag that undoes what the configuration file needs (listen-public = true, --no-listen-public)', async () => {
    const config = join(s.dir, 'public.toml');
    writeFileSync(
      config,
      `dir = ${JSON.stringify(repo.dir)}\nplan = "plans/edge-processes.toml"\nallow-unsigned = true\nstate-dir = ${JSON.stringify(join(s.dir, 'config-state'))}\nlisten = "0.0.0.0:8080"\nlisten-public = true\n`,
    );
    expect((await doctor(['--config', config])).checks[0]).toMatchObject({
      check: 'settings',
      status: 'pass',
      detail: expect.stringContaining(`(the command line and ${config})`),
    });
    const args = ['--config', config, '--no-listen-public'];
    const { checks } = await doctor(args);
    expect(of(checks, 'settings')).toMatchObject({
      status: 'fail',
      detail: `keystone agent refuses to start (exit 2): ${agentRefusal(args).message}`,
    });
  });

  it('a value doctor cannot even read (--plan ""): the settings line, every other check not run', async () => {
    const { code, checks } = await doctor([...base(), '--plan', '']);
    expect(code).toBe(1);
    expect(checks[0]).toMatchObject({
      check: 'settings',
      status: 'fail',
      detail:
        'keystone agent refuses to start (exit 2): --plan takes a plan file; leave it out to take the plan from fleet.toml',
    });
    expect(checks.slice(1).every((c) => c.status === 'skip')).toBe(true);
  });

  it('passes a good configuration: the flags of a device, and the same in a configuration file', async () => {
    const dir = join(s.dir, 'good');
    mkdirSync(dir);
    for (const d of ['recipes', 'plans']) cpSync(join(repo.dir, d), join(dir, d), { recursive: true });
    const args = [
      '--dir',
      dir,
      '--plan',
      'plans/edge-processes.toml',
      '--allow-unsigned',
      '--state-dir',
      join(s.dir, 'good-state'),
      '--listen',
      '127.0.0.1:18080',
      '--window',
      'mon,tue 02:00-04:00 Europe/Berlin',
      '--grace',
      '5s',
    ];
    const { checks } = await doctor(args);
    expect(checks[0]).toMatchObject({
      check: 'settings',
      status: 'pass',
      detail: 'keystone agent takes every setting given: each through its rule, and their combinations',
    });
    expect(of(checks, 'plan').status).toBe('pass');
  });
});

describe('settingsVerdict', () => {
  it('keeps a coded refusal, and throws what is no refusal (a bug)', () => {
    expect(checkSettings(settingsVerdict(() => undefined))).toMatchObject({ check: 'settings', status: 'pass' });
    const coded = Object.assign(new Error('--threshold 2 needs two keys'), { code: 'KS_THRESHOLD_NOT_MET' });
    expect(
      checkSettings(
        settingsVerdict(() => {
          throw coded;
        }),
      ),
    ).toMatchObject({
      status: 'fail',
      code: 'KS_THRESHOLD_NOT_MET',
      detail: 'keystone agent refuses to start (exit 2): --threshold 2 needs two keys',
    });
    expect(() =>
      settingsVerdict(() => {
        throw new TypeError('x is undefined');
      }),
    ).toThrow(TypeError);
  });
});
