// `keystonectl apply-dry --fleet` (SPEC §13) through the real command line, on real Git repositories (the worked
// example plus a fleet.toml written here), signed with a throwaway key or unsigned, bases read with isomorphic-git.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';

/** Two targets on two plans; the gateways override their proxy's port (the composite member's config, SPEC §12). */
const FLEET = `# Devices by hardware and role.
[[targets]]
name = "pi4-eu"
selector = { hw = "pi4", region = "eu" }
devices = ["edge-7"]
plan = "plans/edge.toml"

[[targets]]
name = "gateways"
selector = { role = "gateway" }
plan = "plans/edge-gateway.toml"
config = { gateway = { proxy = { listen = 19091 } } }
`;

let repo: ExampleRepo;
afterEach(() => repo.cleanup());

async function withFleet(text = FLEET, signed = true): Promise<void> {
  repo = await exampleRepo({ signed });
  writeFileSync(join(repo.dir, 'fleet.toml'), text);
  await repo.sign();
  repo.commit('fleet.toml: two targets');
}

function writeFleet(text: string): void {
  writeFileSync(join(repo.dir, 'fleet.toml'), text);
}

const dry = (...args: string[]) => runCtl(['apply-dry', '--fleet', '--repo', repo.dir, ...repo.trust, ...args], '/');
const json = async (...args: string[]) => {
  const r = await dry(...args, '--json');
  expect(r.code, r.stderr + r.stdout).toBe(0);
  return JSON.parse(r.stdout) as {
    targets: Array<{
      name: string;
      plan: string;
      new?: true;
      renamedFrom?: string;
      reconcile: { stopOrder: string[]; startOrder: string[]; noTouch: string[]; reasons: Record<string, string> };
    }>;
    removed: string[];
    comparedWith: unknown;
  };
};
const byName = <T extends { name: string }>(xs: T[], name: string) => xs.find((x) => x.name === name)!;

function signedLine(): string {
  const trusted = readFileSync(join(repo.dir, 'SHA256SUMS.minisig'), 'utf8').split('\n')[2]!;
  const at = Number(/timestamp:(\d+)/.exec(trusted)![1]);
  const keyId = readFileSync(repo.trust[1]!, 'utf8').split('\n')[0]!.split(' ').pop();
  return `signed by ${keyId} at ${new Date(at * 1000).toISOString()} (1 of 1 required)`;
}

describe('apply-dry --fleet against the empty state', () => {
  beforeEach(() => withFleet());

  it('prints every target, in file order, with its own plan (text)', async () => {
    const r = await dry('--empty');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        'apply-dry --fleet: 2 targets of fleet.toml against the empty state (a fresh device); nothing was changed',
        signedLine(),
        '',
        'target pi4-eu — plans/edge.toml',
        '[agent] reconcile plan stop_order=[] start_order=[influxdb api telemetry web] no_touch=[]',
        'layers: 0=[influxdb] 1=[api telemetry] 2=[web]',
        '  influxdb   start    new',
        '  api        start    new',
        '  telemetry  start    new',
        '  web        start    new',
        '',
        'target gateways — plans/edge-gateway.toml',
        '[agent] reconcile plan stop_order=[] start_order=[influxdb api telemetry web gateway/reports gateway/proxy] no_touch=[]',
        'layers: 0=[influxdb] 1=[api telemetry] 2=[web gateway/reports] 3=[gateway/proxy]',
        '  influxdb         start    new',
        '  api              start    new',
        '  telemetry        start    new',
        '  web              start    new',
        '  gateway/reports  start    new',
        '  gateway/proxy    start    new',
        'device permissions beyond the safe defaults (a device without them refuses this revision):',
        '  needs --allow-host-namespaces for web in target pi4-eu (recipes/com.acme.web.toml: lifecycle.run.container.network_mode) [KS_CONTAINER_NOT_PERMITTED]',
        '',
      ].join('\n'),
    );
  });

  it('without --empty or --base the fleet is compared with the empty state too (no agent is asked)', async () => {
    const out = await json();
    expect(out.comparedWith).toEqual({ kind: 'empty' });
    expect(out.targets.map((t) => t.reconcile.startOrder.length)).toEqual([4, 6]);
    expect(out.removed).toEqual([]);
  });

  it('--json: the fleet, each target with its match rules and a reconcile keyed exactly as apply-dry PLAN --json', async () => {
    const r = await dry('--empty', '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out)).toEqual([
      'fleet',
      'repo',
      'signature',
      'comparedWith',
      'targets',
      'removed',
      'permissions',
    ]);
    expect(out.fleet).toBe(true);
    expect(out.repo).toBe(repo.dir);
    expect(out.signature.unsigned).toBe(false);
    expect(out.signature.files).toContain('fleet.toml');
    const [pi4, gateways] = out.targets;
    expect(Object.keys(pi4)).toEqual(['name', 'plan', 'selector', 'devices', 'reconcile']);
    expect(pi4).toMatchObject({
      name: 'pi4-eu',
      plan: 'plans/edge.toml',
      selector: { hw: 'pi4', region: 'eu' },
      devices: ['edge-7'],
    });
    // No selector is not {} (which matches every device); no devices list is the empty one.
    expect(gateways).toMatchObject({
      name: 'gateways',
      plan: 'plans/edge-gateway.toml',
      selector: { role: 'gateway' },
      devices: [],
    });
    // The same keys as one plan's dry run, and the same values: the pi4 target has no overlay.
    const single = JSON.parse(
      (await runCtl(['apply-dry', 'plans/edge.toml', '--empty', '--json', '--repo', repo.dir, ...repo.trust], '/'))
        .stdout,
    );
    const { plan: _p, repo: _r, signature: _s, comparedWith: _c, permissions: _perm, ...reconcile } = single;
    expect(Object.keys(pi4.reconcile)).toEqual(['stopOrder', 'startOrder', 'noTouch', 'layers', 'reasons']);
    expect(pi4.reconcile).toEqual(reconcile);
  });

  it('--format markdown: one section per target holding the reconcile table, orders and layers', async () => {
    const r = await dry('--empty', '--format', 'markdown');
    expect(r.code).toBe(0);
    const md = r.stdout;
    expect(
      md.startsWith(
        `## Keystone dry run: \`fleet.toml\` (2 targets)\n\nCompared with the empty state (a fresh device). 2 of 2 targets change.\n\nSignature: ${signedLine()}.\n\n### target pi4-eu — plans/edge.toml\n\n4 of 4 components change.\n\n| component | action | reason |\n`,
      ),
    ).toBe(true);
    const sections = md.split(/^### /m).slice(1);
    expect(sections.map((s) => s.split('\n')[0])).toEqual([
      'target pi4-eu — plans/edge.toml',
      'target gateways — plans/edge-gateway.toml',
      'Device permissions',
    ]);
    expect(sections[1]).toContain('| `gateway/proxy` | start | new |');
    expect(sections[1]).toContain(
      '**Start order:** `influxdb` → `api` → `telemetry` → `web` → `gateway/reports` → `gateway/proxy`  \n',
    );
    expect(sections[1]).toContain('- layer 3: `gateway/proxy`\n\n</details>\n');
    expect(md).not.toContain('removed targets');
  });
});

describe('apply-dry --fleet --base', () => {
  beforeEach(() => withFleet());

  it('a plan changed in one target only: that target stops what it lost, the other is untouched', async () => {
    repo.edit('plans/edge.toml', /\[\[components\]\]\s*name = "web"[^[]*/, '');
    await repo.sign();
    const out = await json('--base', 'main');
    expect(out.comparedWith).toEqual({
      kind: 'base',
      ref: 'main',
      commit: repo.git('rev-parse', 'main'),
      fleetPresent: true,
    });
    const pi4 = byName(out.targets, 'pi4-eu');
    expect(pi4.reconcile.stopOrder).toEqual(['web']);
    expect(pi4.reconcile.reasons.web).toBe('removed');
    const gateways = byName(out.targets, 'gateways');
    expect(gateways.reconcile.stopOrder).toEqual([]);
    expect(gateways.reconcile.startOrder).toEqual([]);
    expect(out.targets.some((t) => t.new)).toBe(false);
  });

  it("a target's config override changed: only that target's member restarts, with the value in the reason", async () => {
    repo.edit('fleet.toml', 'listen = 19091', 'listen = 19092');
    await repo.sign();
    repo.commit('gateways listen on 19092');
    const out = await json('--base', repo.git('rev-parse', 'HEAD~1'));
    const gateways = byName(out.targets, 'gateways');
    expect(gateways.reconcile.startOrder).toEqual(['gateway/proxy']);
    expect(gateways.reconcile.reasons['gateway/proxy']).toBe('configuration changed: config.listen 19091 → 19092');
    expect(byName(out.targets, 'pi4-eu').reconcile.startOrder).toEqual([]);
    // Against the commit itself nothing changes anywhere.
    const same = await json('--base', 'HEAD');
    expect(same.targets.flatMap((t) => [...t.reconcile.stopOrder, ...t.reconcile.startOrder])).toEqual([]);
  });

  it('a shared recipe bumped: every target that runs it restarts it', async () => {
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await repo.sign();
    const out = await json('--base', 'main');
    expect(byName(out.targets, 'pi4-eu').reconcile.startOrder).toEqual(['api', 'web']);
    expect(byName(out.targets, 'gateways').reconcile.startOrder).toEqual(['api', 'web']);
  });

  it('a new target is compared with the empty state and marked; a removed one is listed with what its devices do', async () => {
    writeFleet(
      FLEET.replace('name = "pi4-eu"', 'name = "pi4-de"').replace('region = "eu"', 'region = "de"') +
        '\n[[targets]]\nname = "lab"\ndevices = ["lab-1"]\nplan = "plans/edge-processes.toml"\n',
    );
    await repo.sign();
    const out = await json('--base', 'main');
    expect(out.targets.map((t) => [t.name, t.new ?? false])).toEqual([
      ['pi4-de', true],
      ['gateways', false],
      ['lab', true],
    ]);
    expect(byName(out.targets, 'lab').reconcile.startOrder).toEqual(['influxdb', 'api', 'telemetry', 'web']);
    expect(byName(out.targets, 'gateways').reconcile.startOrder).toEqual([]);
    expect(out.removed).toEqual(['pi4-eu']);

    const text = await dry('--base', 'main');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('\ntarget pi4-de — plans/edge.toml (new target: compared with the empty state)\n');
    expect(text.stdout).toContain('\ntarget gateways — plans/edge-gateway.toml\n');
    expect(text.stdout).toContain(
      '\nremoved: target pi4-eu (plans/edge.toml): its devices go to the first other target that matches them, or keep running what they have if none does\ndevice permissions beyond the safe defaults',
    );

    const md = await dry('--base', 'main', '--format', 'markdown');
    expect(md.stdout).toContain(
      `Compared with \`main\` (\`${repo.git('rev-parse', '--short=7', 'main')}\`). 2 of 3 targets change; 1 target removed.`,
    );
    expect(md.stdout).toContain(
      '### target lab — plans/edge-processes.toml\n\nNew target: compared with the empty state. 4 of 4 components change.\n',
    );
    expect(md.stdout).toContain('### target gateways — plans/edge-gateway.toml\n\nNothing changes.\n');
    expect(md.stdout).toContain(
      '### removed targets\n\n- `pi4-eu` (`plans/edge.toml`): removed: its devices go to the first other target that matches them, or keep running what they have if none does.\n\n### Device permissions\n',
    );
  });

  it('a target renamed (the same selector and devices) is compared with its old self, not with the empty state, and is not listed as removed', async () => {
    writeFleet(FLEET.replace('name = "pi4-eu"', 'name = "pi4-de"'));
    await repo.sign();
    const out = await json('--base', 'main');
    const pi4 = byName(out.targets, 'pi4-de');
    expect(pi4.new).toBeUndefined();
    expect(pi4.renamedFrom).toBe('pi4-eu');
    expect(pi4.reconcile.startOrder).toEqual([]);
    expect(out.removed).toEqual([]);
    const text = await dry('--base', 'main');
    expect(text.stdout).toContain(
      '\ntarget pi4-de — plans/edge.toml (renamed from pi4-eu: the same devices, compared with its plan at the base)\n',
    );
    expect(text.stdout).not.toContain('removed:');
  });

  it("a target moved to another plan is compared with its old plan's state, and the text says which plan it was", async () => {
    repo.edit('fleet.toml', 'plan = "plans/edge.toml"', 'plan = "plans/edge-processes.toml"');
    await repo.sign();
    const out = await json('--base', 'main');
    const pi4 = byName(out.targets, 'pi4-eu');
    expect(pi4.new).toBeUndefined();
    // edge-processes runs web as a process (another recipe): web alone changes.
    expect(pi4.reconcile.startOrder).toEqual(['web']);
    expect(pi4.reconcile.noTouch).toEqual(['influxdb', 'api', 'telemetry']);
    expect((await dry('--base', 'main')).stdout).toContain(
      '\ntarget pi4-eu — plans/edge-processes.toml (plan was plans/edge.toml at the base)\n',
    );
  });

  it('a base without fleet.toml: every target is new, and the comparison says so', async () => {
    // The example's first commit, before fleet.toml.
    repo.git('tag', 'before-fleet', 'HEAD~1');
    const out = await json('--base', 'before-fleet');
    expect(out.comparedWith).toEqual({
      kind: 'base',
      ref: 'before-fleet',
      commit: repo.git('rev-parse', 'HEAD~1'),
      fleetPresent: false,
    });
    expect(out.targets.map((t) => t.new)).toEqual([true, true]);
    expect(out.targets.map((t) => t.reconcile.startOrder.length)).toEqual([4, 6]);
    expect((await dry('--base', 'before-fleet')).stdout).toMatch(
      /^apply-dry --fleet: 2 targets of fleet\.toml against git before-fleet \([0-9a-f]{7}\), where fleet\.toml does not exist yet; nothing was changed\n/,
    );
  });

  it('an invalid fleet.toml at the base exits 2 naming the base', async () => {
    writeFleet(FLEET + '\n[[targets]]\nname = "gateways"\nselector = {}\nplan = "plans/edge.toml"\n');
    await repo.sign();
    repo.commit('a duplicate target');
    writeFleet(FLEET);
    await repo.sign();
    const r = await dry('--base', 'HEAD');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('keystonectl: fleet.toml at HEAD (the base) is invalid (1 error)');
    const j = await dry('--base', 'HEAD', '--json');
    expect(JSON.parse(j.stdout).error).toMatchObject({
      code: 'KS_INVALID_BASE',
      plan: 'fleet.toml',
      base: 'HEAD',
      diagnostics: [{ code: 'KS_FLEET_DUPLICATE_TARGET' }],
    });
    const md = await dry('--base', 'HEAD', '--format', 'markdown');
    expect(md.stdout).toContain('### Keystone dry run: `fleet.toml` is invalid at the base `HEAD`');
  });

  it('an unknown ref fails with exit code 1', async () => {
    const r = await dry('--base', 'no-such-branch');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('KS_GIT_REF_NOT_FOUND');
  });
});

describe('apply-dry --fleet with an invalid fleet.toml (exit 2)', () => {
  beforeEach(() => withFleet());

  it('two targets with one name: file, line, TOML path and code, on stderr; the markdown on stdout; the JSON error', async () => {
    writeFleet(FLEET.replace('name = "gateways"', 'name = "pi4-eu"'));
    await repo.sign();
    const r = await dry('--base', 'main');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'keystonectl: fleet.toml is invalid (1 error); nothing was changed\n' +
        '  fleet.toml:9: targets[1].name: target "pi4-eu" is declared twice (first declared at targets[0] (line 3): target names are unique) [KS_FLEET_DUPLICATE_TARGET]\n',
    );
    const md = await dry('--base', 'main', '--format', 'markdown');
    expect(md.code).toBe(2);
    expect(md.stdout).toBe(
      '### Keystone dry run: `fleet.toml` is invalid\n\n1 error; a device would refuse this revision and keep running what it has.\n\n' +
        '- `fleet.toml:9` `targets[1].name` target "pi4-eu" is declared twice (first declared at targets[0] (line 3): target names are unique) `KS_FLEET_DUPLICATE_TARGET`\n',
    );
    const j = await dry('--json');
    expect(j.code).toBe(2);
    expect(JSON.parse(j.stdout)).toEqual({
      error: {
        code: 'KS_INVALID_REVISION',
        plan: 'fleet.toml',
        diagnostics: [
          {
            code: 'KS_FLEET_DUPLICATE_TARGET',
            message: 'target "pi4-eu" is declared twice',
            file: 'fleet.toml',
            path: 'targets[1].name',
            line: 9,
            hint: 'first declared at targets[0] (line 3): target names are unique',
          },
        ],
      },
    });
  });

  it('a plan that does not exist: named at the target that points at it', async () => {
    repo.edit('fleet.toml', 'plan = "plans/edge-gateway.toml"', 'plan = "plans/nowhere.toml"');
    await repo.sign();
    const r = await dry('--empty');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^ {2}fleet\.toml:11: targets\[1\]\.plan: target "gateways": plan plans\/nowhere\.toml: .* \[KS_FILE_NOT_FOUND\]$/m,
    );
    const j = JSON.parse((await dry('--empty', '--json')).stdout);
    expect(j.error.diagnostics).toMatchObject([
      { code: 'KS_FILE_NOT_FOUND', file: 'fleet.toml', path: 'targets[1].plan', line: 11 },
    ]);
  });

  it('an unknown key in a target: its line and path', async () => {
    writeFleet(FLEET.replace('devices = ["edge-7"]', 'devices = ["edge-7"]\nwave = "canary"'));
    await repo.sign();
    const r = await dry('--empty', '--json');
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.diagnostics).toMatchObject([
      { code: 'KS_UNKNOWN_KEY', file: 'fleet.toml', path: 'targets[0].wave', line: 6 },
    ]);
  });

  it("every target's problem at once: a missing plan in one, an override of a component its plan lacks in the other", async () => {
    writeFleet(
      FLEET.replace('plan = "plans/edge.toml"', 'plan = "plans/nowhere.toml"').replace(
        'config = { gateway',
        'config = { gatewy',
      ),
    );
    await repo.sign();
    const r = await dry('--empty');
    expect(r.code).toBe(2);
    // The overlay's problem is named once, at the override: the plan itself is fine.
    expect(r.stderr).toMatch(/^keystonectl: fleet\.toml is invalid \(2 errors\); nothing was changed\n/);
    expect(r.stderr).toMatch(/^ {2}fleet\.toml:6: targets\[0\]\.plan: .*\[KS_FILE_NOT_FOUND\]$/m);
    expect(r.stderr).not.toContain('KS_FLEET_PLAN_INVALID');
    expect(r.stderr).toMatch(
      /^ {2}fleet\.toml:12: targets\[1\]\.config\.gatewy: "gatewy" is not a component of plans\/edge-gateway\.toml .*\[KS_FLEET_UNKNOWN_COMPONENT\]$/m,
    );
  });
});

describe('apply-dry --fleet and the trust policy', () => {
  it('a fleet.toml edited after signing is refused (exit 2), and the markdown says so for the pull request', async () => {
    await withFleet();
    repo.edit('fleet.toml', 'listen = 19091', 'listen = 19092');
    const r = await dry('--empty');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('KS_DIGEST_MISMATCH');
    const md = await dry('--empty', '--format', 'markdown');
    expect(md.code).toBe(2);
    expect(md.stdout).toMatch(
      /^### Keystone dry run: `fleet\.toml` is refused\n\n> \*\*Signature check failed:\*\* .*`KS_DIGEST_MISMATCH`/,
    );
  });

  it('a fleet.toml that was never signed is refused', async () => {
    repo = await exampleRepo();
    writeFleet(FLEET);
    const r = await dry('--empty');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('KS_FILE_NOT_SIGNED');
  });

  it('an unsigned repository with --allow-unsigned: the dry run, with the warning on stderr and in the markdown', async () => {
    await withFleet(FLEET, false);
    repo.edit('fleet.toml', 'listen = 19091', 'listen = 19092');
    const r = await dry('--base', 'main');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^keystonectl apply-dry: WARNING: UNSIGNED/);
    expect(r.stdout).toContain('  gateway/proxy    restart  configuration changed: config.listen 19091 → 19092\n');
    const md = await dry('--base', 'main', '--format', 'markdown');
    expect(md.stdout).toMatch(/\n> \*\*Warning:\*\* UNSIGNED/);
  });

  it('no trusted key and no --allow-unsigned is a usage error', async () => {
    await withFleet();
    const r = await runCtl(['apply-dry', '--fleet', '--repo', repo.dir, '--empty'], '/');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no trusted key');
  });
});

describe('apply-dry --fleet usage errors (exit 2, with the usage)', () => {
  beforeEach(() => withFleet());

  it.each([
    [['plans/edge.toml'], '--fleet dry-runs every target of fleet.toml: give no PLAN'],
    [['--agent', 'http://127.0.0.1:1'], "--agent excludes --fleet (a device's agent is one target)"],
    [['--token', 'x'], '--token excludes --fleet'],
    [['--empty', '--base', 'main'], '--empty and --base exclude each other'],
    [['--format', 'html'], '--format must be text or markdown'],
  ])('%j', async (extra, message) => {
    const r = await dry(...extra);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('usage: keystonectl apply-dry PLAN');
    expect(r.stderr).toContain('keystonectl apply-dry --fleet [--repo DIR]');
  });
});
