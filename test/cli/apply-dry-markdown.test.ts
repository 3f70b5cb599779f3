// `apply-dry --format markdown` as a pull request sees it: a real Git repository (git CLI) whose base branch is the
// worked example and whose head bumps a version and adds a component, compared through `--base origin/main` as the
// CI job does. The whole comment is checked, and so are the cases where it must still say something: an invalid
// head, a refused signature, an invalid base.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';

const PLAN = 'plans/edge.toml';

/** A component with no artifacts, hard on the API: it joins the last layer beside web. */
const MQTT_RECIPE = `[metadata]
name = "com.acme.mqtt"
version = "2.0.18"
description = "A message broker that relays API events."

[lifecycle.run]
type = "process"
restart_policy = "always"

[lifecycle.run.exec]
command = "sleep"
args = ["1000"]

[[dependencies]]
name = "com.acme.api"
type = "hard"
`;

let repo: ExampleRepo;
let remoteDir: string;
beforeEach(async () => {
  repo = await exampleRepo();
  // The base as CI has it: main pushed to a remote and fetched back as origin/main.
  remoteDir = join(repo.keyDir, 'remote.git');
  repo.git('init', '-q', '--bare', remoteDir);
  repo.git('remote', 'add', 'origin', remoteDir);
  repo.git('push', '-q', 'origin', 'main');
  repo.git('fetch', '-q', 'origin');
  repo.git('checkout', '-q', '-b', 'bump-api-add-mqtt');
});
afterEach(() => repo.cleanup());

/** The pull request: api 1.4.0 → 1.5.0, and a new component mqtt in the plan. */
async function headBumpsAndAdds(): Promise<void> {
  repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
  writeFileSync(join(repo.dir, 'recipes/com.acme.mqtt.toml'), MQTT_RECIPE);
  const plan = join(repo.dir, PLAN);
  writeFileSync(
    plan,
    readFileSync(plan, 'utf8') + '\n[[components]]\nname = "mqtt"\nrecipe = "recipes/com.acme.mqtt.toml"\n',
  );
  await repo.sign();
  repo.commit('api 1.5.0, and mqtt');
}

function signedBy(): string {
  const trusted = readFileSync(join(repo.dir, 'SHA256SUMS.minisig'), 'utf8').split('\n')[2]!;
  const at = Number(/timestamp:(\d+)/.exec(trusted)![1]);
  const keyId = readFileSync(repo.trust[1]!, 'utf8').split('\n')[0]!.split(' ').pop();
  return `signed by ${keyId} at ${new Date(at * 1000).toISOString()} (1 of 1 required)`;
}

const dry = (...extra: string[]) =>
  runCtl(
    ['apply-dry', PLAN, '--base', 'origin/main', '--repo', repo.dir, ...repo.trust, '--format', 'markdown', ...extra],
    '/',
  );

describe('apply-dry --format markdown for a pull request', () => {
  it('shows what merging does: the version change, the new component, stops and starts in order with reasons, the signer', async () => {
    await headBumpsAndAdds();
    const r = await dry();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const base = repo.git('rev-parse', '--short=7', 'origin/main');
    expect(r.stdout).toBe(
      [
        '### Keystone dry run: `plans/edge.toml`',
        '',
        `Compared with \`origin/main\` (\`${base}\`). 3 of 5 components change.`,
        '',
        `Signature: ${signedBy()}.`,
        '',
        '| component | action | reason |',
        '| --- | --- | --- |',
        '| `influxdb` | keep | unchanged |',
        '| `api` | restart | version 1.4.0 → 1.5.0 |',
        '| `telemetry` | keep | unchanged |',
        '| `web` | restart | hard dependency api restarts |',
        '| `mqtt` | start | new |',
        '',
        '**Stop order:** `web` → `api`  ',
        '**Start order:** `api` → `web` → `mqtt`  ',
        '**Untouched:** `influxdb`, `telemetry`',
        '',
        '<details><summary>Layers</summary>',
        '',
        '- layer 0: `influxdb`',
        '- layer 1: `api`, `telemetry`',
        '- layer 2: `web`, `mqtt`',
        '',
        '</details>',
        '',
        '#### Device permissions',
        '',
        'A device refuses this revision unless its agent runs with these flags (beyond the safe defaults):',
        '',
        '- needs `--allow-host-namespaces` for `web`: `recipes/com.acme.web.toml` `lifecycle.run.container.network_mode` `KS_CONTAINER_NOT_PERMITTED`',
        '',
      ].join('\n'),
    );
  });

  it('removing a component shows it stopped, dependents first', async () => {
    const plan = join(repo.dir, PLAN);
    writeFileSync(plan, readFileSync(plan, 'utf8').replace(/\[\[components\]\]\nname = "web"\nrecipe = "[^"]+"\n/, ''));
    await repo.sign();
    repo.commit('no web');
    const r = await dry();
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('| `web` | stop | removed |');
    expect(r.stdout).toContain('**Stop order:** `web`  ');
    expect(r.stdout).toContain('**Start order:** _nothing_  ');
  });

  it('an invalid head still renders, every error with file, line, path and code, and exits 2', async () => {
    await headBumpsAndAdds();
    repo.edit('recipes/com.acme.mqtt.toml', 'name = "com.acme.api"', 'name = "com.acme.nothing"');
    repo.edit('recipes/com.acme.api.toml', 'restart_policy', 'restart_polcy');
    await repo.sign();
    const r = await dry();
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(
      /^### Keystone dry run: `plans\/edge\.toml` is invalid\n\n2 errors; a device would refuse this revision and keep running what it has\.\n\n/,
    );
    expect(r.stdout).toMatch(
      /^- `recipes\/com\.acme\.mqtt\.toml:\d+` `dependencies\[0\]\.name` .*com\.acme\.nothing.* `KS_DEP_MISSING`$/m,
    );
    expect(r.stdout).toMatch(
      /^- `recipes\/com\.acme\.api\.toml:\d+` `lifecycle\.run\.restart_polcy` unknown key "restart_polcy" \(did you mean "restart_policy"\?\) `KS_UNKNOWN_KEY`$/m,
    );
  });

  it('a change that is not signed renders the refusal (not an empty comment) and exits 2', async () => {
    await headBumpsAndAdds();
    repo.edit('recipes/com.acme.api.toml', 'version = "1.5.0"', 'version = "1.6.0"');
    const r = await dry();
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('### Keystone dry run: `plans/edge.toml` is refused\n');
    expect(r.stdout).toMatch(
      /^> \*\*Signature check failed:\*\* .*does not match its digest.* \(file `recipes\/com\.acme\.api\.toml`\) `KS_DIGEST_MISMATCH`$/m,
    );
    expect(r.stderr).toContain('[KS_DIGEST_MISMATCH]');
  });

  it('a head signed by a key the device does not trust is refused the same way', async () => {
    await headBumpsAndAdds();
    const other = join(repo.keyDir, 'other');
    expect((await runCtl(['keygen', '--out', other, '--no-password'], '/')).code).toBe(0);
    const r = await runCtl(
      [
        'apply-dry',
        PLAN,
        '--base',
        'origin/main',
        '--repo',
        repo.dir,
        '--trusted-key',
        `${other}.pub`,
        '--format',
        'markdown',
      ],
      '/',
    );
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^> \*\*Signature check failed:\*\* .* `KS_UNTRUSTED_KEY`$/m);
  });

  it('an invalid base says the errors are the base’s, in markdown, and exits 2', async () => {
    repo.git('checkout', '-q', 'main');
    repo.edit('recipes/com.acme.web.toml', 'name = "com.acme.api"', 'name = "com.acme.nothing"');
    await repo.sign();
    repo.commit('broken main');
    repo.git('push', '-q', 'origin', 'main');
    repo.git('fetch', '-q', 'origin');
    repo.git('checkout', '-q', '-b', 'fix');
    repo.edit('recipes/com.acme.web.toml', 'name = "com.acme.nothing"', 'name = "com.acme.api"');
    await repo.sign();
    repo.commit('fix');
    const r = await dry();
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('### Keystone dry run: `plans/edge.toml` is invalid at the base `origin/main`\n');
    expect(r.stdout).toMatch(/`KS_DEP_MISSING`$/m);
  });

  it('the graph renders as Mermaid that fits a ```mermaid fence', async () => {
    await headBumpsAndAdds();
    const r = await runCtl(['graph', PLAN, '--repo', repo.dir, ...repo.trust, '--format', 'mermaid'], '/');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'flowchart TB',
        '    c0_influxdb["influxdb"]',
        '    c1_api["api"]',
        '    c2_telemetry["telemetry"]',
        '    c3_web["web"]',
        '    c4_mqtt["mqtt"]',
        '    c0_influxdb -- "hard" --> c1_api',
        '    c0_influxdb -. "ordering" .-> c2_telemetry',
        '    c1_api -- "hard" --> c3_web',
        '    c1_api -- "hard" --> c4_mqtt',
        '',
      ].join('\n'),
    );
    // Nothing in it can close the fence early.
    expect(r.stdout).not.toMatch(/^\s*(```|~~~)/m);
  });
});
