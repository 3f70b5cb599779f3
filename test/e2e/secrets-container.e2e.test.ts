// A container component reading secrets through a real agent (SPEC §16 point 4, issue 30): the enrolled device of
// test/support/secret-fleet.ts (real agent, real Git server, secrets made by the built `keystonectl secret`), its plan
// a container of the real engine (the busybox test image, imported from the host's static busybox: no registry) that
// reads {{secret.db_password}} in its environment (alone and inside a URL) and two [[lifecycle.run.secrets]] files,
// one under /run/secrets, one at an absolute path. In order: the values reach the container, whose secret files are
// read-only mounts of host files no one can write under the agent's secrets directory; the API's view of the
// component holds no value, and the log tail scrubs the value the component itself printed; stopping the component removes the container and the
// host files; and no value is in any of the agent's log lines, API answers, events, /metrics, reports, or its state
// directory (save the component's own log file, which holds what it printed: docs/secrets.md says so).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';
import { ownerTag } from '../../src/agent/orphan-sweep.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import { BUSYBOX_IMAGE, ensureBusyboxImage, removeContainersLabelled } from '../support/busybox-image.js';
import { until } from '../support/composite-fixture.js';
import { needs } from '../support/requirements.js';
import {
  allGitObjects,
  collectEvents,
  findIn,
  grepTree,
  planOf,
  SecretFleet,
  type Finding,
} from '../support/secret-fleet.js';
import { agentEngineArgs, engineCli, engineName, engineRequirement, recipeRuntime } from '../support/test-engine.js';
import { inspectOrUndefined } from '../runtime/container-fixtures.js';

/** The busybox test image is imported from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE (docker by default). */
const engine = needs(engineRequirement(), 'busybox');
const cli = engineCli();

const D = 'eu-1';
const random = (what: string) => `${what}-${randomBytes(30).toString('base64url')}`;
const DB = random('db');
const TLS_BODY = randomBytes(48).toString('base64');
const TLS = `-----BEGIN PRIVATE KEY-----\n${TLS_BODY}\n-----END PRIVATE KEY-----\n`;
const VALUES = new Map([
  ['db_password', DB],
  ['tls_key', TLS_BODY],
]);
const q = (s: string) => JSON.stringify(s);

const FLEET = `[[targets]]
name = "eu"
selector = { region = "eu" }
plan = "plans/eu.toml"
`;

/** The container prints the length of its password, and then the password itself (the log tail must scrub it). */
const BOX_SCRIPT =
  'echo "box up: ${#DB_PASSWORD} characters in DB_PASSWORD"; echo "printed by the component: $DB_PASSWORD"; exec sleep 1000';

function boxRecipe(): string {
  const runtime = recipeRuntime();
  return [
    '[metadata]',
    'name = "com.acme.box"',
    'version = "1.0.0"',
    '',
    '[lifecycle.run]',
    'type = "container"',
    'restart_policy = "always"',
    '',
    '[lifecycle.run.container]',
    `image = ${q(BUSYBOX_IMAGE)}`,
    'pull_policy = "never"',
    ...(runtime ? [`runtime = ${q(runtime)}`] : []),
    `command = ["sh", "-c", ${q(BOX_SCRIPT)}]`,
    '',
    '[lifecycle.run.container.env]',
    'DB_PASSWORD = "{{secret.db_password}}"',
    'DB_URL = "postgres://app:{{secret.db_password}}@db.local/app"',
    'PLAIN = "plain-value"',
    '',
    '[[lifecycle.run.secrets]]',
    'name = "tls_key"',
    'path = "tls_key"',
    '',
    '[[lifecycle.run.secrets]]',
    'name = "db_password"',
    'path = "/etc/app/password"',
    '',
  ].join('\n');
}

/** A command line run in the container (`docker exec`, as the container's user): its stdout and exit status. */
function inContainer(id: string, script: string): { out: string; status: number | null } {
  const r = spawnSync(cli.cmd, [...cli.args, 'exec', id, 'sh', '-c', script], { encoding: 'utf8', timeout: 30_000 });
  return { out: r.stdout, status: r.status };
}

describe.skipIf(engine.skip)(
  engine.title(`a container component reading secrets through a real agent (a real ${engineName()} engine)`),
  { timeout: 60_000 },
  () => {
    let f: SecretFleet;
    let tag: string;
    let boxId: string;
    let hostFiles: string[] = [];
    let plainPid: number;
    /** What the agent published besides its API answers (the event stream), for the last test's grep. */
    const published: Array<{ where: string; text: string }> = [];

    const h = () => f.h(D);
    const boxInstance = () => {
      const i = h().component('box')?.instance;
      return i?.kind === 'container' ? i : undefined;
    };

    beforeAll(async () => {
      await ensureBusyboxImage();
      f = await SecretFleet.create();
      f.files.set('fleet.toml', FLEET);
      f.files.set('recipes/box.toml', boxRecipe());
      f.files.set('plans/eu.toml', planOf(['plain', 'box']));
      await f.enrol({ name: D, labels: { region: 'eu' } });
      tag = ownerTag(h().stateDir);
      await f.secretSet('db_password', ['eu'], DB);
      await f.secretSet('tls_key', ['eu'], TLS, { viaFile: true });
      const c1 = await f.push('box, a container reading db_password and tls_key');
      // f.start's flags, and the engine's (with podman, its socket), as ContainerHarness gives them.
      const harness = h();
      const start = harness.start.bind(harness);
      harness.start = (o) => start({ ...o, args: [...agentEngineArgs(), ...(o.args ?? [])] });
      f.start(D);
      await f.reported(c1, D, 'success', 60_000);
    }, 120_000);

    afterAll(async () => {
      // The agent first (it would restart what is removed), then its containers by owner label, then the rest.
      const agent = f?.agents.get(D);
      if (agent && !agent.exit) {
        process.kill(-agent.pid, 'SIGKILL');
        await agent.exited;
      }
      if (tag) removeContainersLabelled(LABELS.owner, tag);
      await f?.cleanup();
    });

    it("the values reach the container: in its environment, and as read-only files mounted from host files in the agent's secrets directory", async () => {
      const box = await until(boxInstance, 20_000, "box's container in the store");
      boxId = box.id;
      const info = (await inspectOrUndefined(boxId))!;
      expect(info.State.Running).toBe(true);
      expect(info.Config.Labels[LABELS.owner]).toBe(tag);

      // What the component sees (read as its own user, through the engine).
      expect(inContainer(boxId, 'echo "$DB_PASSWORD"').out === `${DB}\n`, 'DB_PASSWORD holds the value').toBe(true);
      expect(
        inContainer(boxId, 'echo "$DB_URL"').out === `postgres://app:${DB}@db.local/app\n`,
        'DB_URL holds the value inside the URL',
      ).toBe(true);
      expect(inContainer(boxId, 'echo "$PLAIN"').out).toBe('plain-value\n');
      expect(inContainer(boxId, 'cat /run/secrets/tls_key').out === TLS, '/run/secrets/tls_key holds the value').toBe(
        true,
      );
      expect(inContainer(boxId, 'cat /etc/app/password').out === DB, '/etc/app/password holds the value').toBe(true);
      // Read-only: neither written nor replaced from inside.
      expect(inContainer(boxId, 'echo x > /run/secrets/tls_key').status).not.toBe(0);
      expect(inContainer(boxId, 'echo x > /etc/app/password').status).not.toBe(0);
      expect(inContainer(boxId, 'cat /run/secrets/tls_key').out === TLS).toBe(true);

      // Each file is a read-only bind mount of a host file in the agent's secrets directory (on tmpfs where there is one).
      const root = f.secretsRootOf(D);
      expect(root, 'the agent recorded its secrets directory').toBeDefined();
      const mounts = new Map((info.Mounts ?? []).map((m) => [m.Destination, m]));
      hostFiles = [];
      for (const [dest, value] of [
        ['/run/secrets/tls_key', TLS],
        ['/etc/app/password', DB],
      ] as const) {
        const m = mounts.get(dest);
        expect(m, `a mount at ${dest} (mounts: ${[...mounts.keys()].join(', ')})`).toBeDefined();
        expect(m!.RW, `${dest} is read-only`).toBe(false);
        expect(m!.Source.startsWith(root! + '/'), `${m!.Source} is under ${root}`).toBe(true);
        expect(readFileSync(m!.Source).equals(Buffer.from(value)), `${m!.Source} holds the value`).toBe(true);
        // Written by no one on the host, and reached by no one but the agent's user: the container reads it through the
        // mount, whatever its user, so the file is 0444 in a directory only the agent's user enters.
        expect((statSync(m!.Source).mode & 0o777).toString(8)).toBe('444');
        const dir = statSync(dirname(m!.Source));
        expect((dir.mode & 0o777).toString(8), `${dirname(m!.Source)}'s mode`).toBe('700');
        expect(dir.uid).toBe(process.getuid!());
        hostFiles.push(m!.Source);
      }
      // The engine is given the value in the container's environment (docker inspect, as root, shows it: docs/secrets.md).
      expect(info.Config.Env.includes(`DB_PASSWORD=${DB}`)).toBe(true);
      plainPid = h().pidsOf().plain!;
      expect(plainPid).toBeGreaterThan(0);
    });

    it("the API's view of the component holds no value, and its log tail scrubs the value the component printed", async () => {
      const api = f.api(D);
      const view = await api.get('/v1/components/box');
      expect(view.status).toBe(200);
      expect(view.body).toMatchObject({ name: 'box', runtime: 'container', state: 'running', containerId: boxId });
      const text = JSON.stringify(view.body);
      for (const value of VALUES.values()) expect(text.includes(value)).toBe(false);
      // The component's own lines come through the log tail: its first line as written, the second with [secret].
      const tail = await until(
        async () => {
          const r = await api.get('/v1/logs/box?lines=5000');
          const t = typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
          return t.includes('printed by the component:') ? t : undefined;
        },
        20_000,
        "box's printed lines in GET /v1/logs/box",
      );
      expect(tail).toContain(`box up: ${DB.length} characters in DB_PASSWORD`);
      expect(tail).toContain('printed by the component: [secret]');
      expect(tail).not.toContain(DB);
    });

    it('stopping the component removes its container and its secret files on the host; plain keeps running', async () => {
      const port = f.ports.get(D)!;
      const token = readFileSync(join(h().stateDir, API_TOKEN_FILE), 'utf8').trim();
      const events = collectEvents(port, token);
      expect(hostFiles).toHaveLength(2);
      f.files.set('plans/eu.toml', planOf(['plain']));
      const c2 = await f.push('box removed');
      await f.waitApplied(D, c2, 45_000);
      await until(
        async () => ((await inspectOrUndefined(boxId)) === undefined ? true : undefined),
        20_000,
        "box's container to be removed",
      );
      for (const file of hostFiles) await until(() => !existsSync(file) || undefined, 10_000, `${file} to be removed`);
      expect(h().pidsOf()).toEqual({ plain: plainPid });
      // What the dashboard's live view got meanwhile: box stopping, the revision applied.
      await until(
        () => events.text().includes(`"revision":"${c2}","outcome":"success"`) || undefined,
        10_000,
        'the revision on the event stream',
      );
      expect(events.text()).toContain('data: {"component":"box","state":"stopping"}');
      published.push({ where: 'GET /v1/events during the stop', text: await events.stop() });
    });

    it("no value in the agent's log lines, API answers, events, /metrics, reports or state directory", async () => {
      const findings: Finding[] = [];
      const look = (where: string, text: string | Uint8Array) => findings.push(...findIn(where, text, VALUES));
      const a = f.agents.get(D)!;
      expect(a.logs.length).toBeGreaterThan(10);
      look('the log lines', JSON.stringify(a.logs));
      look('non-JSON stdout', a.rawLines.join('\n'));
      look('stderr', a.stderr);

      const api = f.api(D);
      const get = async (path: string) => {
        const r = await api.get(path);
        look(`GET ${path}`, typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
        return r;
      };
      for (const path of [
        '/v1/components',
        '/v1/components/plain',
        '/v1/revision',
        '/v1/history?limit=100',
        '/v1/graph',
        '/v1/policy',
        '/healthz',
        '/',
        '/v1/session',
      ])
        await get(path);
      for (const path of [
        '/v1/logs/box?lines=5000',
        '/v1/logs/box?lines=5000&stderr=true',
        '/v1/logs/plain?lines=5000',
      ])
        await get(path);
      const metrics = await fetch(`http://127.0.0.1:${f.ports.get(D)!}/metrics`);
      expect(metrics.status).toBe(200);
      look('GET /metrics', await metrics.text());
      for (const p of published) look(p.where, p.text);
      look("the reports repository's objects", await allGitObjects(f.reportsBare));
      look("the fleet repository's objects", await allGitObjects(f.fleetBare));

      // The state directory: the component's own log file holds what it printed (positive control of the grep), nothing
      // else holds a value (the store keeps the placeholder and the keyed digest).
      const root = f.secretsRootOf(D);
      const r = await grepTree(
        h().stateDir,
        VALUES,
        (p) => root !== undefined && (p === root || p.startsWith(root + '/')),
      );
      expect(r.files).toBeGreaterThan(5);
      const own = r.findings.filter((x) => /(^|\/)box\/.*stdout\.log$/.test(x.where));
      expect(
        own.map((x) => x.value),
        `box's stdout log holds the printed password (found: ${r.findings.map((x) => x.where).join(', ')})`,
      ).toContain('db_password');
      findings.push(
        ...r.findings.filter((x) => !own.includes(x)).map((x) => ({ ...x, where: `state directory: ${x.where}` })),
      );

      expect(findings, findings.map((x) => `${x.value} in ${x.where}`).join('\n')).toEqual([]);
    });
  },
);
