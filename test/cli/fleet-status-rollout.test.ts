// `keystonectl fleet status` of a commit whose fleet.toml has a [rollout] (SPEC §14): a real repository with the
// devices' notes (the real Git notes reporter, with target= and wave=) and their rollout refs (made with
// `git update-ref`, as the names alone count), read as a local path, as a reports repository, and over smart HTTP
// in the one fetch that brings the notes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutState } from '../../src/core/rollout-gate.js';
import { statusContext, type CommitState } from '../../src/report/commit-status.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { bucketOf, rolloutRef } from '../../src/report/rollout-refs.js';
import { runCtl } from '../support/cli-run.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

const T0 = Date.parse('2026-12-01T17:00:00Z'); // the canary's first success on the tip
const min = 60_000;
const TOKEN = 'fleet-rollout-token-1234';

const git = gitIn;

const FLEET_TOML = `[[targets]]
name = "all"
selector = {}
plan = "plans/edge.toml"

[rollout]
waves = [
  { name = "canary", devices = ["c-1", "c-2", "c-3"] },
  { name = "early", percent = 50 },
  { name = "everyone", percent = 100 },
]
bake = "10m"
min_success = 2
abort_failure_percent = 34
`;

async function commit(dir: string, file: string, text: string, at: number): Promise<string> {
  writeFileSync(join(dir, file), text);
  await git(dir, ['add', '.']);
  const date = `${Math.floor(at / 1000)} +0000`;
  await git(dir, ['commit', '--quiet', '-m', `change ${file}`], { GIT_COMMITTER_DATE: date, GIT_AUTHOR_DATE: date });
  return git(dir, ['rev-parse', 'HEAD']);
}

/** The device's note (as its agent writes it) and its rollout ref for the commit, pointing at its notes tip. */
async function report(
  dir: string,
  device: string,
  c: string,
  wave: string,
  state: RolloutState,
  at: number,
  description: string,
): Promise<void> {
  const noted: CommitState =
    state === 'success' || state === 'failure' || state === 'error' ? state : state === 'halted' ? 'error' : 'pending';
  await new GitNotesReporter({ repository: dir, now: () => at }).deliver({
    commit: c,
    state: noted,
    description,
    context: statusContext(device),
    at,
    fields: { target: 'all', wave },
  });
  await git(dir, [
    'update-ref',
    rolloutRef({ wave, device, commit: c, state }),
    `refs/notes/keystone-devices/${device}`,
  ]);
}

interface Repo {
  dir: string;
  base: string; // c0: every device ran it
  bad: string; // c1: failed on the canary, halted
  tip: string; // c2: the canary baking
}

async function rolloutRepo(root: string): Promise<Repo> {
  const dir = join(root, 'work');
  mkdirSync(join(dir, 'plans'), { recursive: true });
  await git(dir, ['init', '--quiet', '--initial-branch=main']);
  writeFileSync(join(dir, 'fleet.toml'), FLEET_TOML);
  const base = await commit(dir, 'plans/edge.toml', '# edge 0\n', T0 - 120 * min);
  const bad = await commit(dir, 'plans/edge.toml', '# edge 1\n', T0 - 60 * min);
  const tip = await commit(dir, 'plans/edge.toml', '# edge 2\n', T0 - 10 * min);
  // e-4 runs the base and has not looked since: known in early by its ref on c0 alone.
  await report(dir, 'e-4', base, 'early', 'success', T0 - 110 * min, 'applied: 1 component running');
  // c1 halted at the canary: two of its three devices failed.
  await report(dir, 'c-1', bad, 'canary', 'failure', T0 - 55 * min, 'failed: api (exited 1)');
  await report(dir, 'c-2', bad, 'canary', 'error', T0 - 55 * min, 'rejected: invalid plan');
  await report(dir, 'c-3', bad, 'canary', 'success', T0 - 55 * min, 'applied: 1 component running');
  // c2, the fix: two canary successes (the bake runs from the first), the rest held.
  await report(dir, 'c-1', tip, 'canary', 'success', T0, 'applied: 1 component running');
  await report(dir, 'c-2', tip, 'canary', 'success', T0 + 2 * min, 'applied: 1 component running');
  await report(dir, 'c-3', tip, 'canary', 'applying', T0 + 3 * min, 'applying: restart api');
  for (const d of ['e-1', 'e-2'])
    await report(
      dir,
      d,
      tip,
      'early',
      'held',
      T0 + 3 * min,
      'held: waiting for wave canary (2 of 2 successes, baking 7m0s left)',
    );
  await report(dir, 'x-1', tip, 'everyone', 'held', T0 + 3 * min, 'held: waiting for wave early (0 of 2 successes)');
  // Anyone who can push can push a ref: one outside the canonical form (another bucket) counts for nobody.
  const forged = `refs/keystone-rollout/canary/${bucketOf('forged') === '0' ? '1' : '0'}/forged/${tip}-success`;
  await git(dir, ['update-ref', forged, tip]);
  return { dir, base, bad, tip };
}

let root: string;
let repo: Repo;
let server: GitHttpServer;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-fleet-rollout-'));
  repo = await rolloutRepo(root);
  server = await startGitHttpServer({ root: join(root, 'srv'), token: TOKEN });
});
afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

const NOW = T0 + 6 * min;
const at = (ms: number) => ({ now: () => ms });
const local = (args: string[], now = NOW) => runCtl(['fleet', 'status', '--repo', repo.dir, ...args], '/', at(now));
const short = (c: string) => c.slice(0, 12);
/** The paragraph of the text output that starts with `start`. */
const block = (stdout: string, start: string) => stdout.split('\n\n').find((b) => b.startsWith(start));

describe('keystonectl fleet status with a [rollout]', () => {
  it('text: per wave the counts, the bake left, what waits; --devices gives each wave', async () => {
    const r = await local(['--devices']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(block(r.stdout, 'rollout of')).toBe(
      [
        `rollout of ${short(repo.tip)}: canary named devices, early 50 %, everyone 100 %; bake 10m0s, min_success 2, abort above 34 % failed`,
        'wave      rule                  devices  applied  failed  applying  held  bake left  state',
        'canary    named: c-1, c-2, c-3  3        2        0       1         0     4m0s       baking',
        'early     50 %                  3        0        0       0         2     -          waiting for canary',
        'everyone  100 %                 1        0        0       0         1     -          waiting for early',
        "bake left: estimated from the devices' own report times; each device times its bake on the Git host's clock",
      ].join('\n'),
    );
    expect(block(r.stdout, 'device')!.trimEnd().split('\n')).toEqual([
      'device  target  wave      state                    time                  description',
      'c-1     all     canary    success                  2026-12-01 17:00:00Z  applied: 1 component running',
      'c-2     all     canary    success                  2026-12-01 17:02:00Z  applied: 1 component running',
      'c-3     all     canary    pending                  2026-12-01 17:03:00Z  applying: restart api',
      'e-1     all     early     pending                  2026-12-01 17:03:00Z  held: waiting for wave canary (2 of 2 successes, baking 7m0s left)',
      'e-2     all     early     pending                  2026-12-01 17:03:00Z  held: waiting for wave canary (2 of 2 successes, baking 7m0s left)',
      `e-4     all     early     on ${short(repo.base)} (older)  2026-12-01 15:10:00Z  applied: 1 component running`,
      'x-1     all     everyone  pending                  2026-12-01 17:03:00Z  held: waiting for wave early (0 of 2 successes)',
    ]);
  });

  it('once the bake has passed (by the estimate), early applies', async () => {
    const r = await local([], T0 + 10 * min);
    expect(r.stdout).toMatch(/\ncanary +named: c-1, c-2, c-3 +3 +2 +0 +1 +0 +baked +done\n/);
    expect(r.stdout).toMatch(/\nearly +50 % +3 +0 +0 +0 +2 +- +applying\n/);
  });

  it('--commit of the halted commit: halted at the canary, and every later wave with it', async () => {
    const r = await local(['--commit', repo.bad]);
    expect(r.code).toBe(0);
    expect(block(r.stdout, 'rollout of')!.trimEnd().split('\n')).toEqual([
      `rollout of ${short(repo.bad)}: canary named devices, early 50 %, everyone 100 %; bake 10m0s, min_success 2, abort above 34 % failed`,
      'halted at canary: 2 of 3 failed',
      'wave      rule                  devices  applied  failed  applying  held  bake left  state',
      'canary    named: c-1, c-2, c-3  3        1        2       0         0     -          halted',
      'early     50 %                  3        0        0       0         0     -          halted',
      'everyone  100 %                 1        0        0       0         0     -          halted',
    ]);
  });

  it('--json: a rollout key beside the existing ones, and each device its wave', async () => {
    const r = await local(['--json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(Object.keys(j)).toEqual([
      'commit',
      'ref',
      'fleetFile',
      'silentAfter',
      'silentSince',
      'silenceCounts',
      'targets',
      'devices',
      'agentVersions',
      'rollout',
    ]);
    expect(j.rollout).toEqual({
      commit: repo.tip,
      waves: [
        {
          name: 'canary',
          named: { devices: ['c-1', 'c-2', 'c-3'] },
          devices: 3,
          success: 2,
          failed: 0,
          applying: 1,
          held: 0,
          firstSuccessAt: new Date(T0).toISOString(),
          bakeLeftMs: 4 * min,
          state: 'baking',
        },
        {
          name: 'early',
          percent: 50,
          devices: 3,
          success: 0,
          failed: 0,
          applying: 0,
          held: 2,
          waitingFor: 'canary',
          state: 'waiting',
        },
        {
          name: 'everyone',
          percent: 100,
          devices: 1,
          success: 0,
          failed: 0,
          applying: 0,
          held: 1,
          waitingFor: 'early',
          state: 'waiting',
        },
      ],
      bake: '10m0s',
      minSuccess: 2,
      abortFailurePercent: 34,
      requireEnrolled: false,
    });
    expect(Object.fromEntries(j.devices.map((d: { device: string; wave: string }) => [d.device, d.wave]))).toEqual({
      'c-1': 'canary',
      'c-2': 'canary',
      'c-3': 'canary',
      'e-1': 'early',
      'e-2': 'early',
      'e-4': 'early',
      'x-1': 'everyone',
    });
    expect(j.devices[0]).toEqual({
      device: 'c-1',
      target: 'all',
      wave: 'canary',
      state: 'success',
      commit: repo.tip,
      relation: null,
      at: new Date(T0).toISOString(),
      description: 'applied: 1 component running',
    });

    const halted = JSON.parse((await local(['--json', '--commit', repo.bad])).stdout);
    expect(halted.rollout.halted).toEqual({ wave: 'canary', failed: 2, of: 3 });
    expect(halted.rollout.waves.map((w: { state: string }) => w.state)).toEqual(['halted', 'halted', 'halted']);
  });

  it('--format markdown: a rollout table, and the wave of each device', async () => {
    const r = await local(['--format', 'markdown']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      [
        `#### Rollout of \`${short(repo.tip)}\``,
        '',
        'canary named devices, early 50 %, everyone 100 %; bake 10m0s, min_success 2, abort above 34 % failed.',
        '',
        '| wave | rule | devices | applied | failed | applying | held | bake left | state |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        '| canary | named: c-1, c-2, c-3 | 3 | 2 | 0 | 1 | 0 | 4m0s | baking |',
        '| early | 50 % | 3 | 0 | 0 | 0 | 2 | - | waiting for canary |',
      ].join('\n'),
    );
    expect(r.stdout).toContain('| device | wave | state | time | description |');
    expect(r.stdout).toContain('| `c-1` | canary | success | 2026-12-01 17:00:00Z | applied: 1 component running |');
    const halted = await local(['--format', 'markdown', '--commit', repo.bad]);
    expect(halted.stdout).toContain('abort above 34 % failed. **halted at canary: 2 of 3 failed**.');
  });

  it('--reports: the rollout refs come from where the notes are, local and over HTTP in the one fetch', async () => {
    const expected = JSON.parse((await local(['--json'])).stdout) as { rollout: unknown; devices: unknown };
    // The followed repository with neither notes nor rollout refs.
    const code = join(root, 'code-only.git');
    await git(root, ['clone', '--quiet', '--bare', repo.dir, code]);
    expect(await git(code, ['for-each-ref', 'refs/keystone-rollout', 'refs/notes'])).toBe('');
    const viaLocal = await runCtl(
      ['fleet', 'status', '--repo', code, '--ref', 'main', '--reports', repo.dir, '--json'],
      '/',
      at(NOW),
    );
    expect(viaLocal.code, viaLocal.stderr).toBe(0);
    expect(JSON.parse(viaLocal.stdout)).toMatchObject({ rollout: expected.rollout, devices: expected.devices });

    server.createRepository('code');
    server.createRepository('reports');
    const auth = ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`];
    await git(repo.dir, [...auth, 'push', '--quiet', server.url('code'), 'main']);
    await git(repo.dir, [
      ...auth,
      'push',
      '--quiet',
      server.url('reports'),
      'refs/notes/*:refs/notes/*',
      'refs/keystone-rollout/*:refs/keystone-rollout/*',
    ]);
    const before = server.requests.length;
    const viaRemote = await runCtl(
      [
        'fleet',
        'status',
        '--repo',
        server.url('code'),
        '--reports',
        server.url('reports'),
        '--depth',
        '5',
        '--cache-dir',
        mkdtempSync(join(root, 'cache-')),
        '--json',
      ],
      '/',
      {
        ...at(NOW),
        env: { KEYSTONE_GIT_TOKEN: TOKEN },
      },
    );
    expect(viaRemote.code, viaRemote.stderr).toBe(0);
    expect(JSON.parse(viaRemote.stdout)).toMatchObject({ rollout: expected.rollout, devices: expected.devices });
    // Still one fetch from each repository: the rollout refs came with the notes.
    const served = server.requests.slice(before);
    expect(served.filter((q) => q.path.endsWith('/info/refs')).map((q) => q.path.split('/')[1])).toEqual([
      'code.git',
      'reports.git',
    ]);
  });

  it('the remote followed repository itself: its rollout refs, and a ref deleted there is gone from the cache', async () => {
    server.createRepository('fleet');
    const url = server.url('fleet');
    const auth = ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`];
    await git(repo.dir, [
      ...auth,
      'push',
      '--quiet',
      url,
      'main',
      'refs/notes/*:refs/notes/*',
      'refs/keystone-rollout/*:refs/keystone-rollout/*',
    ]);
    const cacheDir = mkdtempSync(join(root, 'cache-'));
    const look = async () =>
      JSON.parse(
        (
          await runCtl(['fleet', 'status', '--repo', url, '--cache-dir', cacheDir, '--json'], '/', {
            ...at(NOW),
            env: { KEYSTONE_GIT_TOKEN: TOKEN },
          })
        ).stdout,
      );
    expect((await look()).rollout.waves[2]).toMatchObject({ name: 'everyone', devices: 1, held: 1 });
    // x-1 moves on and deletes its ref for the tip (as a device does once it runs a newer commit).
    await git(repo.dir, [
      ...auth,
      'push',
      '--quiet',
      url,
      `:${rolloutRef({ wave: 'everyone', device: 'x-1', commit: repo.tip, state: 'held' })}`,
    ]);
    expect((await look()).rollout.waves[2]).toMatchObject({ name: 'everyone', devices: 0, held: 0 });
  });

  it('no [rollout] in the commit: no rollout key, no wave per device', async () => {
    const dir = join(root, 'plain');
    mkdirSync(join(dir, 'plans'), { recursive: true });
    await git(dir, ['init', '--quiet', '--initial-branch=main']);
    writeFileSync(join(dir, 'fleet.toml'), FLEET_TOML.slice(0, FLEET_TOML.indexOf('[rollout]')));
    const c = await commit(dir, 'plans/edge.toml', '# edge\n', T0);
    await report(dir, 'c-1', c, 'canary', 'success', T0, 'applied');
    const j = JSON.parse((await runCtl(['fleet', 'status', '--repo', dir, '--json'], '/', at(NOW))).stdout);
    expect(j.rollout).toBeUndefined();
    expect(j.devices[0]).not.toHaveProperty('wave');
    expect((await runCtl(['fleet', 'status', '--repo', dir], '/', at(NOW))).stdout).not.toContain('rollout');
  });
});
