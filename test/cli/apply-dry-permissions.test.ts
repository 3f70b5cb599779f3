// `keystonectl apply-dry` and the device permissions a change needs (SPEC §5), through the real command line on a copy
// of the example: `needs --allow-root for api` in text, markdown and JSON (`permissions`); every kind of flag a
// container can need; and with `--device-policy` plus the agent's `--allow-*` flags, a refusal (exit 2) with the very
// codes, paths and messages the agent's own device check (runtime/device-check.ts) gives on such a device.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { devicePolicyFrom } from '../../src/cli/policy-args.js';
import { DEFAULT_DEVICE_POLICY, type DevicePolicy } from '../../src/core/device-policy.js';
import { checkContainerComponent } from '../../src/runtime/container-check.js';
import { checkDevice } from '../../src/runtime/device-check.js';
import { hostPolicyFacts } from '../../src/runtime/policy-host.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { loadRevision } from '../../src/load/load-revision.js';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';

let repo: ExampleRepo;
beforeEach(async () => {
  repo = await exampleRepo({ signed: false });
});
afterEach(() => repo.cleanup());

const dry = (...args: string[]) =>
  runCtl(['apply-dry', ...args, '--empty', '--repo', repo.dir, '--allow-unsigned'], '/');
const rootApi = () => repo.edit('recipes/com.acme.api.toml', 'user = "nobody"', 'user = "root"');
/** The web container asking for everything beyond the defaults: privileged, host network, a mount, a capability, a device. */
const greedyWeb = () => {
  repo.edit(
    'recipes/com.acme.web.toml',
    'privileged = false\n',
    'privileged = true\ncapabilities = ["CAP_NET_ADMIN"]\ndevices = ["/dev/ttyUSB0"]\n',
  );
  repo.edit(
    'recipes/com.acme.web.toml',
    /(command = \[[^\n]*\]\n)/,
    '$1\n[[lifecycle.run.container.mounts]]\nsource = "/srv/web"\ntarget = "/www-data"\nread_only = true\n',
  );
};

/** What the agent's own device check refuses of `plan` on a device with `policy`: the issues as the agent logs them. */
async function deviceRefusals(plan: string, policy: DevicePolicy) {
  const loaded = await loadRevision(new DirectoryReader(repo.dir), plan);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const host = hostPolicyFacts({ stateDir: '/var/lib/keystone' });
  return checkDevice(loaded.state, {
    policy,
    host,
    // The container runtime's check, with every mount source present (this machine is not the device).
    containers: { check: (c) => checkContainerComponent(c, { policy, exists: () => true, host }) },
    processes: {
      unreachableWorkDir: async () => undefined,
      runUserOf: async () => undefined,
      agentUser: { uid: 0, gid: 0, gids: [], name: 'root' } as never,
    },
    paths: () => ({}) as never,
  });
}

describe('apply-dry lists the device permissions a change needs beyond the safe defaults', () => {
  it('a recipe with user = "root": needs --allow-root for api, in text, markdown and JSON; exit 0', async () => {
    rootApi();
    const text = await dry('plans/edge-processes.toml');
    expect(text.code, text.stderr).toBe(0);
    expect(
      text.stdout.endsWith(
        'device permissions beyond the safe defaults (a device without them refuses this revision):\n' +
          '  needs --allow-root for api (recipes/com.acme.api.toml: lifecycle.run.security.user) [KS_ROOT_NOT_PERMITTED]\n',
      ),
    ).toBe(true);

    const md = await dry('plans/edge-processes.toml', '--format', 'markdown');
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('#### Device permissions\n');
    expect(md.stdout).toContain(
      '- needs `--allow-root` for `api`: `recipes/com.acme.api.toml` `lifecycle.run.security.user` `KS_ROOT_NOT_PERMITTED`\n',
    );

    const json = await dry('plans/edge-processes.toml', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).permissions).toEqual([
      {
        component: 'api',
        needs: '--allow-root',
        file: 'recipes/com.acme.api.toml',
        path: 'lifecycle.run.security.user',
        code: 'KS_ROOT_NOT_PERMITTED',
      },
    ]);
  });

  it('nothing beyond the defaults: no line, and an empty list in JSON', async () => {
    const text = await dry('plans/edge-processes.toml');
    expect(text.code).toBe(0);
    expect(text.stdout).not.toContain('device permissions');
    expect(JSON.parse((await dry('plans/edge-processes.toml', '--json')).stdout).permissions).toEqual([]);
  });

  it('a container: --allow-host-namespaces, --allow-privileged, --allow-mount PATH, --allow-device /dev/…, --allow-capability CAP', async () => {
    greedyWeb();
    const json = await dry('plans/edge.toml', '--json');
    expect(json.code, json.stderr).toBe(0);
    const perms = JSON.parse(json.stdout).permissions as Array<{ component: string; needs: string }>;
    expect(perms.map((p) => `${p.component} ${p.needs}`)).toEqual([
      'web --allow-host-namespaces',
      'web --allow-privileged',
      'web --allow-mount /srv/web',
      'web --allow-device /dev/ttyUSB0',
      'web --allow-capability CAP_NET_ADMIN',
    ]);
    const text = await dry('plans/edge.toml');
    expect(text.stdout).toContain(
      '  needs --allow-mount /srv/web for web (recipes/com.acme.web.toml: lifecycle.run.container.mounts[0].source) [KS_MOUNT_NOT_PERMITTED]\n',
    );
  });

  it('--fleet: each target’s needs, named by target', async () => {
    copyFileSync(join(PROJECT_ROOT, 'fleet.toml'), join(repo.dir, 'fleet.toml'));
    rootApi();
    const r = await runCtl(['apply-dry', '--fleet', '--empty', '--repo', repo.dir, '--allow-unsigned', '--json'], '/');
    expect(r.code, r.stderr).toBe(0);
    const perms = JSON.parse(r.stdout).permissions as Array<{ target: string; component: string; needs: string }>;
    expect(perms.map((p) => `${p.target} ${p.component} ${p.needs}`)).toEqual([
      'gateways-eu api --allow-root',
      'edge api --allow-root',
    ]);
    const text = await runCtl(['apply-dry', '--fleet', '--empty', '--repo', repo.dir, '--allow-unsigned'], '/');
    expect(text.stdout).toContain(
      '  needs --allow-root for api in target edge (recipes/com.acme.api.toml: lifecycle.run.security.user) [KS_ROOT_NOT_PERMITTED]\n',
    );
    const md = await runCtl(
      ['apply-dry', '--fleet', '--empty', '--repo', repo.dir, '--allow-unsigned', '--format', 'markdown'],
      '/',
    );
    expect(md.stdout).toContain('\n### Device permissions\n');
    expect(md.stdout).toContain(
      '- needs `--allow-root` for `api` (target `edge`): `recipes/com.acme.api.toml` `lifecycle.run.security.user` `KS_ROOT_NOT_PERMITTED`\n',
    );
  });
});

describe('apply-dry --device-policy refuses as such a device would', () => {
  it('the safe defaults refuse user = "root": exit 2, with the agent check’s code, path and message', async () => {
    rootApi();
    const text = await dry('plans/edge-processes.toml', '--device-policy');
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    expect(text.stderr).toContain(
      'keystonectl: plans/edge-processes.toml is refused by the device policy of a device with the safe defaults only (1 problem); nothing was changed\n',
    );

    const json = await dry('plans/edge-processes.toml', '--device-policy', '--json');
    expect(json.code).toBe(2);
    const { error } = JSON.parse(json.stdout);
    expect(error).toMatchObject({
      code: 'KS_NOT_PERMITTED',
      plan: 'plans/edge-processes.toml',
      devicePolicy: 'a device with the safe defaults only',
    });
    const device = await deviceRefusals('plans/edge-processes.toml', DEFAULT_DEVICE_POLICY);
    expect(device).toHaveLength(1);
    const said = (
      error.problems as Array<{
        component: string;
        file: string;
        path: string;
        code: string;
        message: string;
        hint?: string;
      }>
    ).map((p) => ({
      component: p.component,
      file: p.file,
      path: p.path,
      code: p.code,
      message: p.hint ? `${p.message} (${p.hint})` : p.message,
    }));
    expect(said).toEqual(device);
    // The line the agent logs for it (take-revision.ts: `${file}: ${path}: ${message}`), with its code.
    expect(text.stderr).toContain(
      `  ${device[0]!.file}: ${device[0]!.path}: ${device[0]!.message} [${device[0]!.code}]\n`,
    );

    const md = await dry('plans/edge-processes.toml', '--device-policy', '--format', 'markdown');
    expect(md.code).toBe(2);
    expect(md.stdout).toContain(
      'A device with the safe defaults only would refuse this revision and keep running what it has.',
    );
  });

  it('a container against some flags: refused for exactly what the flags leave out, as the device check says', async () => {
    greedyWeb();
    const flags = ['--allow-host-namespaces', '--allow-mount', '/srv', '--allow-capability', 'net_admin'];
    const r = await dry('plans/edge.toml', '--device-policy', ...flags, '--json');
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stdout);
    expect(error.devicePolicy).toBe(
      'a device with --allow-host-namespaces --allow-mount /srv --allow-capability CAP_NET_ADMIN',
    );
    const policy = devicePolicyFrom({
      'allow-host-namespaces': true,
      'allow-mount': ['/srv'],
      'allow-capability': ['net_admin'],
    });
    const device = await deviceRefusals('plans/edge.toml', policy);
    expect(device.map((d) => d.code)).toEqual(['KS_CONTAINER_NOT_PERMITTED', 'KS_DEVICE_NOT_PERMITTED']);
    expect(
      (error.problems as Array<{ code: string; path: string; message: string; hint?: string }>).map((p) => [
        p.code,
        p.path,
        `${p.message} (${p.hint})`,
      ]),
    ).toEqual(device.map((d) => [d.code, d.path, d.message]));
  });

  it('flags that allow everything asked: exit 0, and the needs are still listed', async () => {
    rootApi();
    const r = await dry('plans/edge-processes.toml', '--device-policy', '--allow-root');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('  needs --allow-root for api ');
  });

  it('--fleet with --device-policy refuses every target’s plan as that device would', async () => {
    copyFileSync(join(PROJECT_ROOT, 'fleet.toml'), join(repo.dir, 'fleet.toml'));
    rootApi();
    const r = await runCtl(
      ['apply-dry', '--fleet', '--empty', '--repo', repo.dir, '--allow-unsigned', '--device-policy'],
      '/',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'keystonectl: fleet.toml is refused by the device policy of a device with the safe defaults only (2 problems)',
    );
  });

  it('an --allow-* flag without --device-policy is bad input (exit 2), not silently ignored', async () => {
    const r = await dry('plans/edge-processes.toml', '--allow-root');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--allow-root describes a device: give --device-policy with it');
  });
});
