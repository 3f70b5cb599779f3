// `keystonectl fleet status` end to end: a real repository whose devices reported through the real Git notes
// reporter (per-device refs) and an earlier agent's shared ref, read as a local path and over smart HTTP
// (git http-backend), where the whole fleet's reports are one fetch however many devices there are.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusContext, type CommitState } from '../../src/report/commit-status.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { runCtl } from '../support/cli-run.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

const T0 = Date.parse('2026-12-01T17:00:00Z'); // edge-ok's first report on the tip (its success at T0 + 1m replaces it)
const min = 60_000;
const TOKEN = 'fleet-status-token-1234';

const git = gitIn;

const FLEET_TOML = `[[targets]]
name = "pi4-eu"
selector = { hw = "pi4" }
plan = "plans/edge.toml"

[[targets]]
name = "x86-us"
selector = { hw = "x86" }
devices = ["edge-never"]
plan = "plans/x86.toml"
`;

interface Repo {
  dir: string;
  commits: string[]; // c1, c2, c3 (the tip)
}

async function commit(dir: string, file: string, text: string, at: number): Promise<string> {
  writeFileSync(join(dir, file), text);
  await git(dir, ['add', '.']);
  const date = `${Math.floor(at / 1000)} +0000`;
  await git(dir, ['commit', '--quiet', '-m', `change ${file}`], { GIT_COMMITTER_DATE: date, GIT_AUTHOR_DATE: date });
  return git(dir, ['rev-parse', 'HEAD']);
}

async function report(
  dir: string,
  device: string,
  c: string,
  state: CommitState,
  at: number,
  description: string,
  target?: string,
): Promise<void> {
  const r = new GitNotesReporter({ repository: dir, now: () => at });
  await r.deliver({
    commit: c,
    state,
    description,
    context: statusContext(device),
    at,
    ...(target && { fields: { target } }),
  });
}

/** c1 → c2 → c3, fleet.toml from c1 on, and a fleet with every case on c3. */
async function fleetRepo(root: string): Promise<Repo> {
  const dir = join(root, 'work');
  mkdirSync(join(dir, 'plans'), { recursive: true });
  await git(dir, ['init', '--quiet', '--initial-branch=main']);
  writeFileSync(join(dir, 'fleet.toml'), FLEET_TOML);
  const c1 = await commit(dir, 'plans/edge.toml', '# edge 1\n', T0 - 120 * min);
  const c2 = await commit(dir, 'plans/edge.toml', '# edge 2\n', T0 - 60 * min);
  const c3 = await commit(dir, 'plans/x86.toml', '# x86 3\n', T0 - 10 * min);
  await report(dir, 'edge-quiet', c1, 'success', T0 - 100 * min, 'applied: 1 component running', 'pi4-eu');
  await report(dir, 'edge-old', c1, 'success', T0 - 100 * min, 'applied: 1 component running', 'pi4-eu');
  await report(dir, 'edge-ok', c3, 'pending', T0, 'applying: start api', 'pi4-eu');
  await report(dir, 'edge-ok', c3, 'success', T0 + 1 * min, 'applied: 2 components running', 'pi4-eu');
  await report(dir, 'edge-fail', c3, 'failure', T0 + 2 * min, 'failed: api (exited 1)', 'pi4-eu');
  await report(dir, 'edge-pend', c3, 'pending', T0 + 3 * min, 'applying: start web', 'x86-us');
  await report(dir, 'edge-rej', c3, 'error', T0 + 4 * min, 'rejected: no target in fleet.toml matches labels hw=arm');
  // Alive since the tip's reports began, but (still) on the older c2.
  await report(dir, 'edge-old', c2, 'success', T0 + 5 * min, 'applied: 1 component running', 'pi4-eu');
  // An agent from before per-device refs, on the shared ref.
  await git(dir, [
    'notes',
    '--ref',
    'refs/notes/keystone',
    'add',
    '-m',
    `keystone/edge-legacy success ${new Date(T0 + 6 * min).toISOString()} applied: 3 components running`,
    c3,
  ]);
  return { dir, commits: [c1, c2, c3] };
}

let root: string;
let repo: Repo;
let server: GitHttpServer;
let url: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-fleet-status-'));
  repo = await fleetRepo(root);
  server = await startGitHttpServer({ root: join(root, 'srv'), token: TOKEN });
  server.createRepository('fleet');
  url = server.url('fleet');
  await git(repo.dir, [
    '-c',
    `http.extraHeader=Authorization: Bearer ${TOKEN}`,
    'push',
    '--quiet',
    url,
    'main',
    'refs/notes/*:refs/notes/*',
  ]);
});
afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

const at = (ms: number) => ({ now: () => ms });
const local = (args: string[], now = T0 + 20 * min) =>
  runCtl(['fleet', 'status', '--repo', repo.dir, ...args], '/', at(now));
const remote = (args: string[], now = T0 + 20 * min, cacheDir = mkdtempSync(join(root, 'cache-'))) =>
  runCtl(['fleet', 'status', '--repo', url, '--cache-dir', cacheDir, ...args], '/', {
    ...at(now),
    env: { KEYSTONE_GIT_TOKEN: TOKEN },
  });

const short = (c: string) => c.slice(0, 12);

describe('keystonectl fleet status', () => {
  it('text: per target the states, the device on an older commit, the silent ones, the legacy line', async () => {
    const [c1, c2, c3] = repo.commits as [string, string, string];
    const r = await local([]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        `fleet status of ${short(c3)} (HEAD)`,
        'silent: no report within 10m of 2026-12-01 17:01:00Z (the first report on this commit)',
        '',
        'target       plan             devices  success  failure  pending  error  other commit  silent  waiting',
        'pi4-eu       plans/edge.toml  4        1        1        0        0      1             1       0',
        'x86-us       plans/x86.toml   2        0        0        1        0      0             1       0',
        '(no target)  -                2        1        0        0        1      0             0       0',
        '',
        `  pi4-eu: on another commit: edge-old on ${short(c2)} (older)`,
        `  pi4-eu: silent: edge-quiet (last on ${short(c1)})`,
        '  x86-us: silent: edge-never (never reported)',
        '',
      ].join('\n'),
    );
  });

  it('--devices: one line per device', async () => {
    const [, c2] = repo.commits as [string, string, string];
    const r = await local(['--devices']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n\n')[3]!.trimEnd().split('\n');
    expect(lines).toEqual([
      'device       target       state                    time                  description',
      'edge-fail    pi4-eu       failure                  2026-12-01 17:02:00Z  failed: api (exited 1)',
      'edge-ok      pi4-eu       success                  2026-12-01 17:01:00Z  applied: 2 components running',
      `edge-old     pi4-eu       on ${short(c2)} (older)  2026-12-01 17:05:00Z  applied: 1 component running`,
      'edge-quiet   pi4-eu       silent                   2026-12-01 15:20:00Z  applied: 1 component running',
      'edge-never   x86-us       silent                   -',
      'edge-pend    x86-us       pending                  2026-12-01 17:03:00Z  applying: start web',
      'edge-legacy  (no target)  success                  2026-12-01 17:06:00Z  applied: 3 components running',
      'edge-rej     (no target)  error                    2026-12-01 17:04:00Z  rejected: no target in fleet.toml matches labels hw=arm',
    ]);
  });

  it('before --silent-after has passed, the quiet devices are not silent yet', async () => {
    const r = await local(['--json', '--silent-after', '30m']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.silenceCounts).toBe(false);
    expect(j.devices.find((d: { device: string }) => d.device === 'edge-never').state).toBe('waiting');
    expect(j.devices.find((d: { device: string }) => d.device === 'edge-quiet')).toMatchObject({
      state: 'other-commit',
      relation: 'older',
      commit: repo.commits[0],
    });
  });

  it('--json: the stable keys', async () => {
    const [c1, c2, c3] = repo.commits as [string, string, string];
    const r = await local(['--json', '--ref', 'main']);
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
    ]);
    expect(j).toMatchObject({
      commit: c3,
      ref: 'main',
      fleetFile: true,
      silentAfter: '10m0s',
      silentSince: '2026-12-01T17:01:00.000Z',
      silenceCounts: true,
    });
    expect(j.targets[0]).toEqual({
      name: 'pi4-eu',
      plan: 'plans/edge.toml',
      devices: 4,
      success: 1,
      failure: 1,
      pending: 0,
      error: 0,
      otherCommit: 1,
      silent: 1,
      waiting: 0,
      forged: 0,
      revoked: 0,
      unverified: 0,
      members: ['edge-fail', 'edge-ok', 'edge-old', 'edge-quiet'],
    });
    expect(j.targets.map((t: { name: string }) => t.name)).toEqual(['pi4-eu', 'x86-us', '(no target)']);
    const byName = Object.fromEntries(j.devices.map((d: { device: string }) => [d.device, d]));
    expect(byName['edge-old']).toEqual({
      device: 'edge-old',
      target: 'pi4-eu',
      state: 'other-commit',
      commit: c2,
      relation: 'older',
      at: '2026-12-01T17:05:00.000Z',
      description: 'applied: 1 component running',
    });
    expect(byName['edge-never']).toEqual({
      device: 'edge-never',
      target: 'x86-us',
      state: 'silent',
      commit: null,
      relation: null,
      at: null,
      description: '',
    });
    expect(byName['edge-quiet']).toMatchObject({ state: 'silent', commit: c1, relation: 'older' });
    expect(byName['edge-legacy']).toMatchObject({ target: '(no target)', state: 'success', commit: c3 });
    expect(byName['edge-rej']).toMatchObject({ target: '(no target)', state: 'error', commit: c3 });
  });

  it('--commit an older commit: the tip is newer for the devices on it', async () => {
    const [, c2, c3] = repo.commits as [string, string, string];
    const r = await local(['--json', '--commit', short(c2)]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.commit).toBe(c2);
    const byName = Object.fromEntries(j.devices.map((d: { device: string }) => [d.device, d]));
    expect(byName['edge-old']).toMatchObject({ state: 'success', commit: c2 });
    expect(byName['edge-ok']).toMatchObject({ state: 'other-commit', commit: c3, relation: 'newer' });
  });

  it('a linked work tree (git worktree add) reads the same notes', async () => {
    const linked = join(root, 'linked');
    await git(repo.dir, ['worktree', 'add', '--quiet', '--detach', linked, repo.commits[1]!]);
    const r = await runCtl(['fleet', 'status', '--repo', linked, '--json'], '/', at(T0 + 20 * min));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      (await local(['--json', '--commit', repo.commits[1]!])).stdout.replace(
        `"ref": "${repo.commits[1]}"`,
        '"ref": "HEAD"',
      ),
    );
    expect(JSON.parse(r.stdout).commit).toBe(repo.commits[1]);
    expect((await runCtl(['fleet', 'status', '--repo', linked, '--commit', 'nope'], '/')).code).toBe(2);
  });

  it('--format markdown: a summary and a table per target', async () => {
    const [, c2, c3] = repo.commits as [string, string, string];
    const r = await local(['--format', 'markdown']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`### Keystone fleet status: \`${short(c3)}\` (\`HEAD\`)`);
    expect(r.stdout).toContain('| pi4-eu | `plans/edge.toml` | 4 | 1 | 1 | 0 | 0 | 1 | 1 | 0 |');
    expect(r.stdout).toContain(
      '#### x86-us (`plans/x86.toml`)\n\n| device | state | time | description |\n| --- | --- | --- | --- |\n| `edge-never` | silent | - |  |\n| `edge-pend` | pending | 2026-12-01 17:03:00Z | applying: start web |',
    );
    expect(r.stdout).toContain(
      `| \`edge-old\` | on ${short(c2)} (older) | 2026-12-01 17:05:00Z | applied: 1 component running |`,
    );
    expect(r.stdout).toContain('#### (no target)');
  });

  it('--reports: the notes from a reports repository of their own (agents run with --status-repo), local and remote', async () => {
    const expected = JSON.parse((await local(['--json'])).stdout) as { targets: unknown; devices: unknown };
    // The followed repository without any notes; the reports where the devices pushed them.
    const code = join(root, 'code-only.git');
    await git(root, ['clone', '--quiet', '--bare', repo.dir, code]);
    expect(await git(code, ['for-each-ref', 'refs/notes'])).toBe('');
    const viaLocal = await runCtl(
      ['fleet', 'status', '--repo', code, '--ref', 'main', '--reports', repo.dir, '--json'],
      '/',
      at(T0 + 20 * min),
    );
    expect(viaLocal.code, viaLocal.stderr).toBe(0);
    const localView = JSON.parse(viaLocal.stdout) as typeof expected;
    expect([localView.targets, localView.devices]).toEqual([expected.targets, expected.devices]);

    server.createRepository('code');
    server.createRepository('reports');
    const auth = ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`];
    await git(repo.dir, [...auth, 'push', '--quiet', server.url('code'), 'main']);
    await git(repo.dir, [...auth, 'push', '--quiet', server.url('reports'), 'refs/notes/*:refs/notes/*']);
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
        ...at(T0 + 20 * min),
        env: { KEYSTONE_GIT_TOKEN: TOKEN },
      },
    );
    expect(viaRemote.code, viaRemote.stderr).toBe(0);
    const remoteView = JSON.parse(viaRemote.stdout) as typeof expected;
    expect([remoteView.targets, remoteView.devices]).toEqual([expected.targets, expected.devices]);
    // One fetch from each repository, whatever the fleet's size.
    const served = server.requests.slice(before);
    expect(served.filter((r) => r.path.endsWith('/info/refs')).map((r) => r.path.split('/')[1])).toEqual([
      'code.git',
      'reports.git',
    ]);
  });

  it('exit 2 for a URL with credentials in it (--repo, --reports), which never reaches git', async () => {
    const before = server.requests.length;
    for (const args of [
      ['--repo', url.replace('http://', 'http://ops:s3cret@')],
      ['--repo', repo.dir, '--reports', `${url}?token=s3cret`],
    ]) {
      const r = await runCtl(['fleet', 'status', ...args], '/', at(T0));
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).not.toContain('s3cret');
    }
    expect(server.requests.length).toBe(before);
  });

  it('exit 2 for a commit the repository does not have, and for a bad flag', async () => {
    const bad = await local(['--commit', 'no-such-ref']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no ref or commit "no-such-ref"');
    expect(bad.stdout).toBe('');
    expect((await local(['--silent-after', 'soon'])).code).toBe(2);
    expect((await local(['--format', 'html'])).code).toBe(2);
    expect((await runCtl(['fleet', 'stats'], '/')).code).toBe(2);
  });

  it('a fleet.toml that does not parse: its errors with file:line, and the devices grouped by what they reported; one group without a fleet.toml', async () => {
    const dir = join(root, 'broken');
    mkdirSync(dir);
    await git(dir, ['init', '--quiet', '--initial-branch=main']);
    const bare = await commit(dir, 'README', 'no fleet file\n', T0);
    await report(dir, 'edge-a', bare, 'success', T0, 'applied: 1 component running');
    const none = await runCtl(['fleet', 'status', '--repo', dir, '--json'], '/', at(T0));
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({
      fleetFile: false,
      targets: [{ name: '(no fleet.toml)', devices: 1, success: 1 }],
    });
    const broken = await commit(
      dir,
      'fleet.toml',
      '[[targets]]\nname = "a"\nplan = "plans/a.toml"\nselector = {}\ncolour = "red"\n',
      T0,
    );
    await report(
      dir,
      'edge-a',
      broken,
      'error',
      T0 + 1000,
      'rejected: invalid: 1 error(s), first: fleet.toml:5: colour: unknown key "colour"',
    );
    const r = await runCtl(['fleet', 'status', '--repo', dir, '--json'], '/', at(T0 + 2000));
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/fleet\.toml:5: .*colour.*\[KS_/);
    const view = JSON.parse(r.stdout) as {
      fleetFile: boolean;
      fleetFileErrors: unknown[];
      targets: Array<{ name: string; error: number; members: string[] }>;
    };
    expect(view.fleetFileErrors).toHaveLength(1);
    expect(view.targets.find((t) => t.members.includes('edge-a'))).toMatchObject({ error: 1 });
  });
});

describe('a notes ref written by hand', () => {
  it('whose tip message names no report: the newest line in its tree stands in', async () => {
    const dir = join(root, 'by-hand');
    mkdirSync(join(dir, 'plans'), { recursive: true });
    await git(dir, ['init', '--quiet', '--initial-branch=main']);
    writeFileSync(join(dir, 'fleet.toml'), FLEET_TOML);
    const a = await commit(dir, 'plans/x86.toml', '# a\n', T0 - 30 * min);
    const b = await commit(dir, 'plans/x86.toml', '# b\n', T0 - 20 * min);
    const ref = 'refs/notes/keystone-devices/edge-hand';
    await git(dir, [
      'notes',
      '--ref',
      ref,
      'add',
      '-m',
      `keystone/edge-hand failure ${new Date(T0 - 25 * min).toISOString()} target=x86-us failed: web (exited 2)`,
      a,
    ]);
    await git(dir, [
      'notes',
      '--ref',
      ref,
      'add',
      '-m',
      `keystone/edge-hand success ${new Date(T0 - 28 * min).toISOString()} target=x86-us applied`,
      b,
    ]);
    await git(dir, [
      'notes',
      '--ref',
      ref,
      'add',
      '-f',
      '-m',
      `keystone/edge-hand success ${new Date(T0 - 29 * min).toISOString()} target=x86-us applied`,
      b,
    ]);
    await git(dir, ['notes', '--ref', ref, 'remove', b]);
    // Five minutes after b was committed, nobody reported on it: nobody is silent yet.
    const r = await runCtl(['fleet', 'status', '--repo', dir, '--json'], '/', at(T0 - 15 * min));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).devices).toEqual([
      {
        device: 'edge-hand',
        target: 'x86-us',
        state: 'other-commit',
        commit: a,
        relation: 'older',
        at: new Date(T0 - 25 * min).toISOString(),
        description: 'failed: web (exited 2)',
      },
      {
        device: 'edge-never',
        target: 'x86-us',
        state: 'waiting',
        commit: null,
        relation: null,
        at: null,
        description: '',
      },
    ]);
  });
});

describe('keystonectl fleet status over smart HTTP', () => {
  it('the same view from the remote, in one fetch', async () => {
    const before = server.requests.length;
    const r = await remote(['--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const served = server.requests.slice(before);
    const localView = JSON.parse((await local(['--json', '--ref', 'main'])).stdout);
    const j = JSON.parse(r.stdout);
    // A depth-1 fetch has the tip and its parents' ids, not the grandparents: edge-quiet's c1 is "unknown" there.
    const cutOff = (d: { device: string }) => (d.device === 'edge-quiet' ? { ...d, relation: 'unknown' } : d);
    expect(j).toEqual({ ...localView, devices: localView.devices.map(cutOff) });
    // One git fetch: the ref advertisement, then the protocol v2 ls-refs and fetch commands.
    expect(served.filter((q) => q.path.endsWith('/info/refs'))).toHaveLength(1);
    expect(served.length).toBeLessThanOrEqual(3);
    expect(served.every((q) => q.status === 200)).toBe(true);

    // With some history, the older commits are older again.
    const deep = JSON.parse((await remote(['--json', '--depth', '5'])).stdout);
    expect(deep).toEqual(localView);
  });

  it('the request count does not grow with the fleet', async () => {
    const small = server.requests.length;
    expect((await remote(['--json'])).code).toBe(0);
    const smallCount = server.requests.length - small;
    // Twelve more devices report on the tip, and the notes reach the server.
    const c3 = repo.commits[2]!;
    const extra = join(root, 'extra');
    await git(root, ['clone', '--quiet', '--bare', repo.dir, extra]);
    for (let i = 0; i < 12; i++)
      await report(extra, `edge-x${i}`, c3, 'success', T0 + 7 * min, 'applied: 1 component running', 'x86-us');
    await git(extra, [
      '-c',
      `http.extraHeader=Authorization: Bearer ${TOKEN}`,
      'push',
      '--quiet',
      url,
      'refs/notes/*:refs/notes/*',
    ]);
    const large = server.requests.length;
    const r = await remote(['--json']);
    expect(r.code).toBe(0);
    expect(server.requests.length - large).toBe(smallCount);
    expect(JSON.parse(r.stdout).targets[1]).toMatchObject({ name: 'x86-us', devices: 14, success: 12 });
  });

  it('a cache under $XDG_CACHE_HOME, reused by the next look, and the token kept out of it', async () => {
    const xdg = mkdtempSync(join(root, 'xdg-'));
    const env = { KEYSTONE_GIT_TOKEN: TOKEN, XDG_CACHE_HOME: xdg };
    const first = await runCtl(['fleet', 'status', '--repo', url, '--json'], '/', { ...at(T0 + 20 * min), env });
    expect(first.code).toBe(0);
    const cache = join(xdg, 'keystone', 'fleet', createHash('sha256').update(url).digest('hex'));
    expect(existsSync(join(cache, 'HEAD'))).toBe(true);
    // A new report reaches the server; the next look fetches into the same cache and sees it.
    const c3 = repo.commits[2]!;
    const more = join(root, 'more');
    await git(root, ['clone', '--quiet', '--mirror', url, more], {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Bearer ${TOKEN}`,
    });
    await report(more, 'edge-quiet', c3, 'success', T0 + 8 * min, 'applied: 1 component running', 'pi4-eu');
    await git(more, [
      '-c',
      `http.extraHeader=Authorization: Bearer ${TOKEN}`,
      'push',
      '--quiet',
      url,
      'refs/notes/keystone-devices/edge-quiet',
    ]);
    const again = await runCtl(['fleet', 'status', '--repo', url, '--json'], '/', { ...at(T0 + 20 * min), env });
    expect(JSON.parse(again.stdout).devices.find((d: { device: string }) => d.device === 'edge-quiet')).toMatchObject({
      state: 'success',
      commit: c3,
    });
    expect((await git(cache, ['config', '--list'])) + (await git(cache, ['for-each-ref']))).not.toContain(TOKEN);
  });

  it('exit 1 when the remote cannot be read, 2 for a branch it does not have', async () => {
    const noToken = await runCtl(
      ['fleet', 'status', '--repo', url, '--cache-dir', mkdtempSync(join(root, 'cache-'))],
      '/',
      at(T0),
    );
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain('KS_FLEET_FETCH_FAILED');
    const noBranch = await remote(['--ref', 'no-such-branch']);
    expect(noBranch.code).toBe(2);
    expect(noBranch.stderr).toContain('no-such-branch');
    const noCommit = await remote(['--commit', '0'.repeat(40)]);
    expect(noCommit.code).toBe(2);
    expect(noCommit.stderr).toContain('KS_GIT_REF_NOT_FOUND');
  });

  it('--commit an id older than the shallow fetch: fetched on its own', async () => {
    const c1 = repo.commits[0]!;
    const cd = mkdtempSync(join(root, 'cache-'));
    const r = await remote(['--json', '--commit', c1], T0 + 20 * min, cd);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.commit).toBe(c1);
    expect(j.devices.find((d: { device: string }) => d.device === 'edge-quiet')).toMatchObject({
      state: 'success',
      commit: c1,
    });
  });
});
