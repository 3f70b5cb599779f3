// The worked example's reconciles through the real command line, against real Git refs read with isomorphic-git.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';

let repo: ExampleRepo;
beforeEach(async () => {
  repo = await exampleRepo();
});
afterEach(() => repo.cleanup());

const PLAN = 'plans/edge.toml';

/** The line that says who signed: the test key, at the time the repository was last signed. */
function signedLine(): string {
  const trusted = readFileSync(join(repo.dir, 'SHA256SUMS.minisig'), 'utf8').split('\n')[2]!;
  const at = Number(/timestamp:(\d+)/.exec(trusted)![1]);
  const keyId = readFileSync(repo.trust[1]!, 'utf8').split('\n')[0]!.split(' ').pop();
  return `signed by ${keyId} at ${new Date(at * 1000).toISOString()} (1 of 1 required)`;
}

describe('apply-dry: the worked example (SPEC §4) as golden output', () => {
  it('a fresh device starts everything, layer by layer', async () => {
    const r = await runCtl(['apply-dry', PLAN, '--empty', '--repo', repo.dir, ...repo.trust], '/');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        'apply-dry plans/edge.toml against the empty state (a fresh device); nothing was changed',
        signedLine(),
        '[agent] reconcile plan stop_order=[] start_order=[influxdb api telemetry web] no_touch=[]',
        'layers: 0=[influxdb] 1=[api telemetry] 2=[web]',
        '  influxdb   start    new',
        '  api        start    new',
        '  telemetry  start    new',
        '  web        start    new',
        'device permissions beyond the safe defaults (a device without them refuses this revision):',
        '  needs --allow-host-namespaces for web (recipes/com.acme.web.toml: lifecycle.run.container.network_mode) [KS_CONTAINER_NOT_PERMITTED]',
        '',
      ].join('\n'),
    );
  });

  it('bumping api restarts api and its hard dependent web, nothing else', async () => {
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--base', 'main', '--repo', repo.dir, ...repo.trust], '/');
    expect(r.code).toBe(0);
    const commit = repo.git('rev-parse', '--short=7', 'main');
    expect(r.stdout).toBe(
      [
        `apply-dry plans/edge.toml against git main (${commit}); nothing was changed`,
        signedLine(),
        '[agent] reconcile plan stop_order=[web api] start_order=[api web] no_touch=[influxdb telemetry]',
        'layers: 0=[influxdb] 1=[api telemetry] 2=[web]',
        '  influxdb   keep     unchanged',
        '  api        restart  version 1.4.0 → 1.5.0',
        '  telemetry  keep     unchanged',
        '  web        restart  hard dependency api restarts',
        'device permissions beyond the safe defaults (a device without them refuses this revision):',
        '  needs --allow-host-namespaces for web (recipes/com.acme.web.toml: lifecycle.run.container.network_mode) [KS_CONTAINER_NOT_PERMITTED]',
        '',
      ].join('\n'),
    );
  });

  it('a new influxdb restarts api and web after it and leaves telemetry (ordering) alone', async () => {
    repo.edit('recipes/com.acme.influxdb.toml', 'version = "2.7.5"', 'version = "2.7.6"');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--base', 'main', '--repo', repo.dir, ...repo.trust, '--json'], '/');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.stopOrder).toEqual(['web', 'api', 'influxdb']);
    expect(out.startOrder).toEqual(['influxdb', 'api', 'web']);
    expect(out.noTouch).toEqual(['telemetry']);
    expect(out.layers).toEqual([['influxdb'], ['api', 'telemetry'], ['web']]);
    expect(out.reasons).toEqual({
      influxdb: 'version 2.7.5 → 2.7.6',
      api: 'hard dependency influxdb restarts',
      telemetry: 'unchanged',
      web: 'hard dependency api restarts',
    });
    expect(out.comparedWith).toEqual({
      kind: 'base',
      ref: 'main',
      commit: repo.git('rev-parse', 'main'),
      planPresent: true,
    });
  });
});

describe('apply-dry --base', () => {
  it('a change of configuration without a version bump is reported as such', async () => {
    repo.edit('recipes/com.acme.telemetry.toml', /"--interval", "\d+"/, '"--interval", "4000"');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--base', 'HEAD', '--repo', repo.dir, ...repo.trust, '--json'], '/');
    const out = JSON.parse(r.stdout);
    expect(out.reasons.telemetry).toBe('configuration changed');
    expect(out.startOrder).toEqual(['telemetry']);
    expect(out.noTouch).toEqual(['influxdb', 'api', 'web']);
  });

  it('comments, whitespace and descriptions restart nothing', async () => {
    repo.edit('recipes/com.acme.influxdb.toml', /description = "[^"]*"/, 'description = "reworded"\n# a new comment\n');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--base', 'main', '--repo', repo.dir, ...repo.trust, '--json'], '/');
    const out = JSON.parse(r.stdout);
    expect(out.stopOrder).toEqual([]);
    expect(out.startOrder).toEqual([]);
  });

  it('reads the base from the commit, not the working tree, by branch, tag or abbreviated id', async () => {
    const first = repo.git('rev-parse', 'HEAD');
    repo.git('tag', 'v1');
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await repo.sign();
    repo.commit('bump api');
    // The working tree now equals HEAD: against HEAD nothing changes, against the tag api restarts.
    for (const [ref, started] of [
      ['HEAD', []],
      ['main', []],
      ['v1', ['api', 'web']],
      [first.slice(0, 8), ['api', 'web']],
      [first, ['api', 'web']],
    ] as const) {
      const r = await runCtl(['apply-dry', PLAN, '--base', ref, '--repo', repo.dir, ...repo.trust, '--json'], '/');
      expect(r.code, `${ref}: ${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout).startOrder, ref).toEqual(started);
    }
  });

  it('a removed component is stopped dependents-first', async () => {
    repo.edit('plans/edge.toml', /\[\[components\]\]\s*name = "web"[^[]*/, '');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--base', 'main', '--repo', repo.dir, ...repo.trust, '--json'], '/');
    const out = JSON.parse(r.stdout);
    expect(out.stopOrder).toEqual(['web']);
    expect(out.reasons.web).toBe('removed');
    expect(out.noTouch).toEqual(['influxdb', 'api', 'telemetry']);
  });

  it('a plan that does not exist at the base compares with the empty state and says so', async () => {
    execFileSync('cp', [join(repo.dir, 'plans/edge.toml'), join(repo.dir, 'plans/new.toml')]);
    await repo.sign();
    const r = await runCtl(['apply-dry', 'plans/new.toml', '--base', 'main', '--repo', repo.dir, ...repo.trust], '/');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('where plans/new.toml does not exist yet');
    expect(r.stdout).toContain('start_order=[influxdb api telemetry web]');
  });

  it('an unknown ref fails the operation with exit code 1', async () => {
    const r = await runCtl(['apply-dry', PLAN, '--base', 'no-such-branch', '--repo', repo.dir, ...repo.trust], '/');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('KS_GIT_REF_NOT_FOUND');
  });

  it('a directory that is not a Git repository fails with exit code 1', async () => {
    rmSync(join(repo.dir, '.git'), { recursive: true, force: true });
    const r = await runCtl(['apply-dry', PLAN, '--base', 'main', '--repo', repo.dir, ...repo.trust], '/');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('KS_NOT_A_GIT_REPOSITORY');
  });
});

describe('apply-dry output formats and errors', () => {
  it('--format markdown renders a pull-request comment', async () => {
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await repo.sign();
    const r = await runCtl(
      ['apply-dry', PLAN, '--base', 'main', '--repo', repo.dir, ...repo.trust, '--format', 'markdown'],
      '/',
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('### Keystone dry run: `plans/edge.toml`');
    expect(r.stdout).toContain('| `api` | restart | version 1.4.0 → 1.5.0 |');
    expect(r.stdout).toContain('**Stop order:** `web` → `api`');
    expect(r.stdout).toContain('**Start order:** `api` → `web`');
    expect(r.stdout).toContain('**Untouched:** `influxdb`, `telemetry`');
  });

  it('an invalid revision exits 2 naming file, line, path and code, with every error at once', async () => {
    repo.edit('recipes/com.acme.api.toml', 'restart_policy', 'restart_polcy');
    await repo.sign();
    repo.edit('recipes/com.acme.influxdb.toml', /interval = "[^"]*"/, 'interval = "soon"');
    repo.edit('recipes/com.acme.web.toml', 'name = "com.acme.api"', 'name = "com.acme.nothing"');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--repo', repo.dir, ...repo.trust], '/');
    // Dependency errors between the recipes that parsed are reported in the same run as the parse errors.
    expect(r.stderr).toMatch(
      /recipes\/com\.acme\.web\.toml:\d+: dependencies\[0\]\.name: .*com\.acme\.nothing.*\[KS_DEP_MISSING\]/,
    );
    expect(r.stderr).toContain('(3 errors)');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /recipes\/com\.acme\.api\.toml:\d+: lifecycle\.run\.restart_polcy: unknown key "restart_polcy" \(did you mean "restart_policy"\?\) \[KS_UNKNOWN_KEY\]/,
    );
    expect(r.stderr).toMatch(
      /recipes\/com\.acme\.influxdb\.toml:\d+: lifecycle\.run\.health\.interval: "soon" is not a duration .*\[KS_BAD_DURATION\]/,
    );
  });

  it('--json reports an invalid revision as data on stdout', async () => {
    repo.edit('recipes/com.acme.web.toml', 'name = "com.acme.api"', 'name = "com.acme.nothing"');
    await repo.sign();
    const r = await runCtl(['apply-dry', PLAN, '--repo', repo.dir, ...repo.trust, '--json'], '/');
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out.error.code).toBe('KS_INVALID_REVISION');
    expect(out.error.diagnostics).toEqual([
      expect.objectContaining({
        code: 'KS_DEP_MISSING',
        file: 'recipes/com.acme.web.toml',
        path: 'dependencies[0].name',
      }),
    ]);
  });

  it('bad flags are usage errors with exit code 2', async () => {
    for (const args of [
      ['apply-dry'],
      ['apply-dry', PLAN, '--format', 'html'],
      ['apply-dry', PLAN, '--empty', '--base', 'main'],
      ['apply-dry', PLAN, '--no-such-flag'],
      ['no-such-command'],
    ]) {
      const r = await runCtl([...args, '--repo', repo.dir, ...repo.trust], '/');
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).not.toBe('');
    }
  });

  it('a plan outside the repository is refused', async () => {
    const r = await runCtl(['apply-dry', '/etc/hosts', '--repo', repo.dir, ...repo.trust], '/');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('not inside the repository');
  });

  it('the installed binary runs from the repository as its working directory, with the exit codes of SPEC §9', async () => {
    const bin = join(PROJECT_ROOT, 'bin/keystonectl.js');
    const ok = spawnSync(process.execPath, [bin, 'apply-dry', PLAN, '--empty', ...repo.trust], {
      cwd: repo.dir,
      encoding: 'utf8',
    });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain(
      '[agent] reconcile plan stop_order=[] start_order=[influxdb api telemetry web] no_touch=[]',
    );
    repo.edit('recipes/com.acme.api.toml', '[metadata]', '[metadata]\nbogus = 1');
    await repo.sign();
    const bad = spawnSync(process.execPath, [bin, 'apply-dry', PLAN, '--empty', ...repo.trust], {
      cwd: repo.dir,
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('KS_UNKNOWN_KEY');
  });
});
