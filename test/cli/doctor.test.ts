// `keystone doctor` as people run it (bin/keystone.js, from dist/): the example repository's `npm start` arguments
// pass (exit 0); an unsafe state directory fails (exit 1) with its fix; `--json` says the same as data; a clone in a
// 0700 directory shows the run user that cannot get through; a clock behind the applied signature fails; flags the
// agent does not take are bad input (exit 2); and `--config FILE` is read as the agent reads it.
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/keystone.js';
import { CHECK_IDS } from '../../src/doctor/check-result.js';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';
import { scratch, stateWithApplied, type Scratch } from '../doctor/doctor-fixtures.js';

const run = promisify(execFile);
const KEYSTONE = join(PROJECT_ROOT, 'bin', 'keystone.js');

async function doctor(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [KEYSTONE, 'doctor', ...args], {
      cwd,
      env,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof err.code !== 'number') throw e;
    return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

/** The line of one check: `✓ state-dir   …`. */
const lineOf = (stdout: string, id: string) => stdout.split('\n').find((l) => new RegExp(`^. ${id} `).test(l)) ?? '';

interface JsonCheck {
  check: string;
  ok: boolean;
  status: string;
  detail: string;
  fix: string;
  code: string | null;
}

let repo: ExampleRepo;
let s: Scratch;
beforeAll(async () => {
  repo = await exampleRepo({ signed: true });
  s = scratch();
});
afterAll(() => {
  repo.cleanup();
  s.cleanup();
});

describe('keystone doctor', { timeout: 90_000 }, () => {
  it('passes the example as `npm start` runs it: one line per check, exit 0', async () => {
    const stateDir = join(s.dir, 'start-state');
    const r = await doctor(
      ['--dir', '.', '--plan', 'plans/edge-processes.toml', '--allow-unsigned', '--state-dir', stateDir],
      repo.dir,
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(CHECK_IDS.length + 1);
    expect(lines.slice(0, -1).map((l) => l.split(/\s+/)[1])).toEqual([...CHECK_IDS]);
    for (const l of lines.slice(0, -1)) expect(l).toMatch(/^[✓!-] /);
    expect(lineOf(r.stdout, 'trusted-keys')).toMatch(/^! trusted-keys +--allow-unsigned: .* — fix: /);
    expect(lineOf(r.stdout, 'plan')).toBe(
      `✓ plan              plans/edge-processes.toml (--plan) from directory ${repo.dir}: 4 components (4 processes)`,
    );
    expect(lines.at(-1)).toMatch(/^ready: \d+ passed, 0 failed, 1 warning/);
  });

  it('fails an unsafe state directory: exit 1, the line with its code and fix; --json says the same', async () => {
    const stateDir = join(s.dir, 'unsafe-state');
    mkdirSync(stateDir);
    chmodSync(stateDir, 0o777);
    const args = ['--dir', repo.dir, '--plan', 'plans/edge-processes.toml', ...repo.trust, '--state-dir', stateDir];
    const text = await doctor(args, s.dir);
    expect(text.code).toBe(1);
    expect(lineOf(text.stdout, 'state-dir')).toMatch(
      new RegExp(
        `^✗ state-dir +state directory ${stateDir} is writable by other users \\(mode 777\\) \\[KS_STATE_DIR_UNSAFE\\] — fix: chown \\S+ ${stateDir} && chmod 711 ${stateDir}`,
      ),
    );
    expect(text.stdout.trimEnd().split('\n').at(-1)).toMatch(
      /^the agent would not run as it should: \d+ passed, 1 failed/,
    );

    const json = await doctor(['--json', ...args], s.dir);
    expect(json.code).toBe(1);
    const checks = JSON.parse(json.stdout) as JsonCheck[];
    expect(checks.map((c) => c.check)).toEqual([...CHECK_IDS]);
    for (const c of checks) expect(Object.keys(c)).toEqual(['check', 'ok', 'status', 'detail', 'fix', 'code']);
    expect(checks.find((c) => c.check === 'state-dir')).toMatchObject({
      ok: false,
      status: 'fail',
      code: 'KS_STATE_DIR_UNSAFE',
      fix: expect.stringContaining(`chmod 711 ${stateDir}`),
    });
    expect(checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(['state-dir']);
    expect(checks.find((c) => c.check === 'trusted-keys')).toMatchObject({
      ok: true,
      status: 'pass',
      fix: '',
      code: null,
    });
  });

  it('refuses flags the agent does not take (exit 2), --json being doctor’s own', async () => {
    const r = await doctor(['--dir', repo.dir, '--allow-unsigned', '--json', '--no-such-flag'], s.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^keystone doctor: .*--no-such-flag/);
    expect(r.stderr).toContain('usage: keystone doctor [--config FILE] [agent flags…] [--json]');
  });

  it('reads --config FILE as the agent does, command-line flags over it', async () => {
    const config = join(s.dir, 'agent.toml');
    writeFileSync(
      config,
      `dir = ${JSON.stringify(repo.dir)}\nplan = "plans/edge-processes.toml"\nallow-unsigned = true\nstate-dir = ${JSON.stringify(join(s.dir, 'config-state'))}\n`,
    );
    const r = await doctor(['--config', config, '--json'], s.dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const checks = JSON.parse(r.stdout) as JsonCheck[];
    expect(checks.find((c) => c.check === 'plan')?.detail).toContain(`from directory ${repo.dir}`);
    expect(checks.find((c) => c.check === 'state-dir')?.detail).toContain(join(s.dir, 'config-state'));
    const over = await doctor(['--config', config, '--plan', 'plans/edge.toml', '--json'], s.dir);
    expect((JSON.parse(over.stdout) as JsonCheck[]).find((c) => c.check === 'plan')?.detail).toMatch(
      /^plans\/edge\.toml \(--plan\)/,
    );
  });

  it('fails a clock earlier than the signature the device applied last (the clock set in-process)', async () => {
    const stateDir = join(s.dir, 'clock-state');
    const signedAt = Math.floor(Date.now() / 1000);
    stateWithApplied(stateDir, { id: 'dir:0123456789ab', signedAt });
    let stdout = '';
    const io: CliIo = {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: () => true },
      cwd: s.dir,
      env: process.env,
      now: () => (signedAt - 7200) * 1000,
    };
    const code = await main(
      ['doctor', '--dir', repo.dir, '--plan', 'plans/edge-processes.toml', ...repo.trust, '--state-dir', stateDir],
      io,
      { once: () => undefined },
    );
    expect(code).toBe(1);
    expect(lineOf(stdout, 'clock')).toMatch(
      /^✗ clock +this device's clock says .*, 2 h earlier than the signature of the revision applied last \(dir:0123456789ab\).* — fix: set the clock/,
    );
  });

  const root = needs('root');
  describe.skipIf(root.skip)(root.title('as root'), () => {
    it('names the 0700 directory a clone sits in, which the run user cannot get through', async () => {
      // `git clone` into /root (0700), then `npm start`: the state directory .state inside the clone.
      const home = join(s.dir, 'root-home');
      mkdirSync(home, { mode: 0o700 });
      chmodSync(home, 0o700);
      const clone = join(home, 'keystone');
      cpSync(repo.dir, clone, { recursive: true });
      const r = await doctor(
        ['--dir', '.', '--plan', 'plans/edge-processes.toml', '--allow-unsigned', '--state-dir', '.state'],
        clone,
      );
      expect(r.code).toBe(1);
      expect(lineOf(r.stdout, 'work-dir-reach')).toBe(
        `✗ work-dir-reach    nobody (uid 65534) cannot reach the work directories of influxdb, api, telemetry, web: ${home} (mode 0700) does not let it through [KS_WORK_DIR_UNREACHABLE] — fix: use a state directory every run user can traverse (--state-dir /var/lib/keystone; for the example: KEYSTONE_STATE_DIR=/var/tmp/keystone-example npm start), or chmod o+x ${home}`,
      );
    });
  });
});
