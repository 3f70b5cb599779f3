// Secrets (SPEC §16, issue 30's "Done when") through real agents: three enrolled devices follow one signed repository
// over a real Git smart-HTTP server; fleet.toml puts eu-1 and eu-2 (region=eu) in target "eu" and us-1 (region=us) in
// target "us". The operator makes every secret with the built `keystonectl secret` (values on stdin or --file), signs
// and pushes. On eu's devices, `app` reads {{secret.db_password}} in its environment and tls_key as a file, `other`
// reads {{secret.api_token}} through its [config] (the plan's value), `plain` reads none; each writes the sha256 of
// what it got (never a value) in its work directory.
//
// In order: the values reach env and file; a device of the other target refuses a plan that reads eu's secret, with
// nothing stopped or started; a rekey restarts nothing; a new value restarts exactly its reader; a secret made by the
// `age` binary with `age -R secrets/recipients/eu.txt` is read, and the target key is opened by `age -d -i` with a
// device's identity; after a revocation and a rekey the revoked device cannot read a value set after it; and, last,
// no value is found in any log line, API answer, event stream, /metrics, state directory, Git object or ref of the
// server, or apply-dry and `secret ls` output.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';
import { parseAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { decryptWith } from '../../src/secrets/age-codec.js';
import type { CliResult } from '../support/cli-run.js';
import { runCtl } from '../support/cli-run.js';
import { until } from '../support/composite-fixture.js';
import { PUSH_TOKEN } from '../support/enrolled-fleet.js';
import { GIT_ENV } from '../support/git-env.js';
import { needs } from '../support/requirements.js';
import {
  allGitObjects,
  collectEvents,
  environOf,
  findIn,
  grepTree,
  hasTmpfs,
  keystonectl,
  mountOf,
  planOf,
  realpathOrUndefined,
  SecretFleet,
  secretReaderRecipe,
  sha256,
  uidOf,
  type Finding,
} from '../support/secret-fleet.js';

const run = promisify(execFile);
const ageBinary = needs('age');

const EU = ['eu-1', 'eu-2'] as const;
const US = 'us-1';
const DEVICES = [...EU, US];

/** Long random values: nothing else anywhere can contain one by chance. */
const random = (what: string) => `${what}-${randomBytes(30).toString('base64url')}`;
const V = {
  db1: random('db1'),
  db2: random('db2'),
  db3: random('db3'),
  tok1: random('tok1'),
  tok2: random('tok2'),
  tlsBody: randomBytes(48).toString('base64'),
};
/** A multi-line value: the grep looks for its random line, the part no header shares. */
const TLS = `-----BEGIN PRIVATE KEY-----\n${V.tlsBody}\n-----END PRIVATE KEY-----\n`;
/** The values set so far, by label: what the last test looks for. */
const set = new Map<string, string>();

const FLEET = `[[targets]]
name = "eu"
selector = { region = "eu" }
plan = "plans/eu.toml"

[[targets]]
name = "us"
selector = { region = "us" }
plan = "plans/us.toml"
`;

let f: SecretFleet;
/** Everything a device or the CLI published during the run that the last test greps: API answers, events, apply-dry. */
const published: Array<{ where: string; text: string }> = [];
/** The pids each device runs, by component, as last checked. */
const pids = new Map<string, Record<string, number>>();

const h = (d: string) => f.h(d);
const work = (d: string, c: string) => h(d).workDir(c);
const shaFile = (d: string, c: string, file: string) => {
  try {
    return readFileSync(join(work(d, c), `${file}.sha`), 'utf8').trim();
  } catch {
    return undefined;
  }
};
/** Waits until `component` on `device` wrote the sha256 of `value` for `file` (an env variable or a secret file). */
const sees = (d: string, c: string, file: string, value: string) =>
  until(
    () => shaFile(d, c, file) === sha256(value) || undefined,
    20_000,
    `${d}'s ${c} to write the sha256 of the expected ${file}`,
  );

/** `keystonectl apply-dry … --json` of the checkout (HEAD) against `base` (the commit before), kept for the last test's grep. */
async function applyDry(base: string, args: string[]): Promise<CliResult> {
  const r = await runCtl(
    ['apply-dry', ...args, '--repo', f.fx.dir, ...f.fx.trustArgs, '--base', base, '--json'],
    f.fx.dir,
  );
  published.push({
    where: `keystonectl apply-dry ${args.join(' ')} --base ${base.slice(0, 8)} --json`,
    text: r.stdout + r.stderr,
  });
  return r;
}

beforeAll(async () => {
  f = await SecretFleet.create();
  f.files.set('fleet.toml', FLEET);
  f.files.set(
    'recipes/app.toml',
    secretReaderRecipe('app', {
      env: { DB_PASSWORD: '{{secret.db_password}}' },
      files: [{ secret: 'tls_key', path: 'tls.key' }],
    }),
  );
  // other reads its token through its configuration: the plan gives {{secret.api_token}} as the value of [config] token.
  f.files.set(
    'recipes/other.toml',
    secretReaderRecipe('other', { env: { API_TOKEN: '{{config.token}}' }, config: { token: 'none' } }),
  );
  f.files.set('plans/eu.toml', planOf(['app', 'plain', { name: 'other', config: { token: '{{secret.api_token}}' } }]));
  f.files.set('plans/us.toml', planOf(['plain']));
  await f.enrol({ name: 'eu-1', labels: { region: 'eu' } });
  await f.enrol({ name: 'eu-2', labels: { region: 'eu' } });
  await f.enrol({ name: US, labels: { region: 'us' } });
  // The first secret of eu makes eu's key (wrapped to eu-1, eu-2 and the operator); us gets its own key (us-1).
  await f.secretSet('db_password', ['eu'], V.db1);
  set.set('db_password v1', V.db1);
  await f.secretSet('tls_key', ['eu'], TLS, { viaFile: true });
  set.set('tls_key', V.tlsBody);
  await f.secretSet('api_token', ['eu'], V.tok1);
  set.set('api_token v1', V.tok1);
  const us = await f.rekey('us');
  expect(us.readers).toEqual([US]);
  const first = await f.push('three components, two of them read eu secrets');
  for (const d of DEVICES) f.start(d);
  await Promise.all(DEVICES.map((d) => f.reported(first, d, 'success', 45_000)));
}, 90_000);

afterAll(async () => {
  await f?.cleanup();
});

describe('secrets through real agents (SPEC §16)', { timeout: 60_000 }, () => {
  it("the value reaches the environment and the file (0400, the run user's, on tmpfs, through a link in the work directory)", async () => {
    const tmpfs = hasTmpfs();
    for (const d of EU) {
      const running = h(d).pidsOf();
      expect(Object.keys(running).sort()).toEqual(['app', 'other', 'plain']);
      await sees(d, 'app', 'DB_PASSWORD', V.db1);
      await sees(d, 'app', 'tls.key', TLS);
      await sees(d, 'other', 'API_TOKEN', V.tok1);
      // The process itself holds the value in its environment (read here as root, or as its own user).
      const env = environOf(running.app!);
      if (env) expect(env.get('DB_PASSWORD') === V.db1).toBe(true);
      expect(environOf(running.plain!)?.has('DB_PASSWORD') ?? false).toBe(false);

      const link = join(work(d, 'app'), 'tls.key');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      const file = realpathOrUndefined(link)!;
      expect(file, `${link} resolves`).toBeDefined();
      const st = statSync(file);
      expect((st.mode & 0o777).toString(8)).toBe('400');
      expect(st.uid).toBe(uidOf(running.app!));
      expect(readFileSync(file).equals(Buffer.from(TLS))).toBe(true);
      // On tmpfs when the device has one (never then in the state directory, which is on disk).
      const root = f.secretsRootOf(d)!;
      expect(file.startsWith(root + '/'), `${file} is under ${root}`).toBe(true);
      if (tmpfs) {
        expect(mountOf(file)?.fsType, `${file} is on ${JSON.stringify(mountOf(file))}`).toBe('tmpfs');
        expect(file.startsWith(h(d).stateDir + '/')).toBe(false);
      }
      pids.set(d, running);

      // app and other read secrets and run as the same default user (as plain does): each is warned of, not refused.
      const warned = f.agents.get(d)!.lines((l) => l.code === 'KS_SECRET_SHARED_USER');
      expect([...new Set(warned.map((l) => l.component))].sort()).toEqual(['app', 'other']);
      const app = warned.find((l) => l.component === 'app')!;
      expect(app.msg).toMatch(/^app reads secrets \(db_password, tls_key\) and runs as /);
      expect([...(app.others as string[])].sort()).toEqual(['other', 'plain']);
    }
    expect(h(US).pidsOf()).toEqual({ plain: expect.any(Number) });
    expect(f.agents.get(US)!.lines((l) => l.code === 'KS_SECRET_SHARED_USER')).toEqual([]);
    pids.set(US, h(US).pidsOf());
  });

  it('a device of the other target refuses a plan reading an eu secret: error naming it, nothing stopped or started', async () => {
    f.files.set('plans/us.toml', planOf(['plain', 'app']));
    const before = f.applied(US);
    const c2 = await f.push('us also runs app, which reads eu secrets');
    const note = await f.reported(c2, US, 'error');
    expect(note.description).toContain('KS_SECRET_NOT_RECIPIENT');
    expect(note.description).toContain('db_password');
    expect(note.description).toMatch(/not encrypted to target us/);
    expect(h(US).history()[0]).toMatchObject({ revision: c2, outcome: 'rejected' });
    expect(f.applied(US)).toBe(before);
    expect(h(US).pidsOf()).toEqual(pids.get(US));
    expect(h(US).processesOf('app')).toEqual([]);
    // eu's devices take the commit (their plan is the same): nothing restarts there.
    for (const d of EU) {
      await f.waitApplied(d, c2);
      expect(h(d).pidsOf()).toEqual(pids.get(d));
    }
    f.files.set('plans/us.toml', planOf(['plain']));
  });

  it('keystonectl secret rekey --target eu: a new key, every secret re-encrypted, and no component restarts', async () => {
    const files = [
      'secrets/db_password.age',
      'secrets/tls_key.age',
      'secrets/api_token.age',
      'secrets/keys/eu.age',
      'secrets/recipients/eu.txt',
    ];
    const before = new Map(files.map((p) => [p, readFileSync(join(f.fx.dir, p))]));
    const links = new Map(EU.map((d) => [d, realpathOrUndefined(join(work(d, 'app'), 'tls.key'))]));
    const r = await f.rekey('eu');
    expect(r.readers).toEqual(['eu-1', 'eu-2']);
    expect(r.recipient).not.toBe(r.previousRecipient);
    expect([...r.reencrypted].sort()).toEqual(['api_token', 'db_password', 'tls_key']);
    for (const p of files)
      expect(readFileSync(join(f.fx.dir, p)).equals(before.get(p)!), `${p} is rewritten`).toBe(false);
    expect(readFileSync(join(f.fx.dir, 'secrets/recipients/eu.txt'), 'utf8')).toContain(r.recipient);

    const c2 = f.applied('eu-1')!;
    const c3 = await f.push('rekey eu');
    for (const d of DEVICES) await f.waitApplied(d, c3);
    for (const d of DEVICES) expect(h(d).pidsOf(), `${d}'s pids`).toEqual(pids.get(d));
    for (const d of EU) {
      expect(realpathOrUndefined(join(work(d, 'app'), 'tls.key'))).toBe(links.get(d));
      expect(shaFile(d, 'app', 'DB_PASSWORD')).toBe(sha256(V.db1));
    }
    // The operator's dry run agrees: the same values, nothing to do for their readers.
    const dry = await applyDry(c2, ['plans/eu.toml', '--identity', f.operatorKey]);
    expect(dry.code, dry.stderr).toBe(0);
    expect((JSON.parse(dry.stdout) as { noTouch: string[] }).noTouch, dry.stdout).toEqual(
      expect.arrayContaining(['app', 'other', 'plain']),
    );
  });

  it('a new value for db_password restarts exactly app, the component reading it', async () => {
    const port = f.ports.get('eu-1')!;
    const token = readFileSync(join(h('eu-1').stateDir, API_TOKEN_FILE), 'utf8').trim();
    const events = collectEvents(port, token);
    const oldFiles = new Map(EU.map((d) => [d, realpathOrUndefined(join(work(d, 'app'), 'tls.key'))!]));
    const c3 = f.applied('eu-1')!;
    await f.secretSet('db_password', ['eu'], V.db2);
    set.set('db_password v2', V.db2);
    const c4 = await f.push('a new db_password');
    for (const d of DEVICES) await f.waitApplied(d, c4);
    for (const d of EU) {
      const now = await until(
        () => {
          const p = h(d).pidsOf();
          return p.app !== undefined && p.app !== pids.get(d)!.app ? p : undefined;
        },
        20_000,
        `${d}'s app to restart`,
      );
      expect(now.plain).toBe(pids.get(d)!.plain);
      expect(now.other).toBe(pids.get(d)!.other);
      await sees(d, 'app', 'DB_PASSWORD', V.db2);
      await sees(d, 'app', 'tls.key', TLS);
      // The stopped instance's secret file is gone; the new one's link resolves to a new file.
      await until(() => !existsSync(oldFiles.get(d)!) || undefined, 10_000, `${d}'s old secret file to be removed`);
      const file = realpathOrUndefined(join(work(d, 'app'), 'tls.key'));
      expect(file).toBeDefined();
      expect(file).not.toBe(oldFiles.get(d));
      pids.set(d, now);
    }
    expect(h(US).pidsOf()).toEqual(pids.get(US));
    // A pull request's dry run (no identity) cannot decrypt: "ciphertext changed"; the operator's tells the value.
    const pr = await applyDry(c3, ['plans/eu.toml']);
    expect(pr.code, pr.stderr).toBe(0);
    expect((JSON.parse(pr.stdout) as { reasons: Record<string, string> }).reasons.app).toMatch(
      /secret db_password ciphertext changed/,
    );
    const op = await applyDry(c3, ['plans/eu.toml', '--identity', f.operatorKey]);
    expect(op.code, op.stderr).toBe(0);
    const opJson = JSON.parse(op.stdout) as { noTouch: string[]; reasons: Record<string, string> };
    expect(opJson.reasons.app).toMatch(/secret db_password changed/);
    expect(opJson.noTouch).toEqual(expect.arrayContaining(['other', 'plain']));
    const fleetDry = await applyDry(c3, ['--fleet']);
    expect(fleetDry.code, fleetDry.stderr).toBe(0);
    // What the dashboard's live view got while app restarted.
    await until(
      () => /event: started[^\n]*\ndata: [^\n]*"app"/.test(events.text()) || undefined,
      10_000,
      "app's restart on eu-1's event stream",
    );
    published.push({ where: 'GET /v1/events on eu-1 during the restart', text: await events.stop() });
  });

  describe.skipIf(ageBinary.skip)(ageBinary.title('interop with the age binary'), () => {
    it("a secret made by `age -R secrets/recipients/eu.txt` is read by eu's devices; `age -d -i` opens the target key with a device's identity", async () => {
      const out = join(f.fx.dir, 'secrets', 'api_token.age');
      await new Promise<void>((resolve, reject) => {
        const child = execFile('age', ['-R', join(f.fx.dir, 'secrets', 'recipients', 'eu.txt'), '-o', out], (e) =>
          e ? reject(e) : resolve(),
        );
        child.stdin!.end(V.tok2);
      });
      set.set('api_token v2 (age binary)', V.tok2);
      const c5 = await f.push('api_token made by age -R');
      for (const d of DEVICES) await f.waitApplied(d, c5);
      for (const d of EU) {
        await sees(d, 'other', 'API_TOKEN', V.tok2);
        const now = h(d).pidsOf();
        expect(now.other).not.toBe(pids.get(d)!.other);
        expect(now.app).toBe(pids.get(d)!.app);
        expect(now.plain).toBe(pids.get(d)!.plain);
        pids.set(d, now);
      }
      // The other way: the device's own identity file opens eu's key file, whose identity opens a secret made by keystonectl.
      const tmp = mkdtempSync(join(f.root, 'age-'));
      try {
        const target = (await run('age', ['-d', '-i', f.ageKeyOf('eu-1'), join(f.fx.dir, 'secrets/keys/eu.age')]))
          .stdout;
        writeFileSync(join(tmp, 'eu.key'), target, { mode: 0o600 });
        const value = (await run('age', ['-d', '-i', join(tmp, 'eu.key'), join(f.fx.dir, 'secrets/db_password.age')]))
          .stdout;
        expect(value === V.db2).toBe(true);
        // us-1's identity is not a recipient of eu's key.
        await expect(run('age', ['-d', '-i', f.ageKeyOf(US), join(f.fx.dir, 'secrets/keys/eu.age')])).rejects.toThrow();
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    });
  });

  it('after eu-2 is revoked and eu rekeyed, eu-2 cannot read a value set after the rekey: it refuses, naming the secret; eu-1 applies', async () => {
    const before = await f.push('nothing new (the commit the revocation follows)');
    for (const d of DEVICES) await f.waitApplied(d, before);
    const oldKeyFile = readFileSync(join(f.fx.dir, 'secrets/keys/eu.age'));
    f.files.set('devices/revoked.toml', '[[revoked]]\ndevice = "eu-2"\nreason = "stolen in the test"\n');
    const r = await f.rekey('eu');
    expect(r.readers).toEqual(['eu-1']);
    expect(r.removed).toEqual(['eu-2']);
    const c6 = await f.push('revoke eu-2, rekey eu');
    await f.waitApplied('eu-1', c6);
    expect(h('eu-1').pidsOf()).toEqual(pids.get('eu-1'));
    const refusedRekey = await f.reported(c6, 'eu-2', 'error');
    expect(refusedRekey.description).toContain('KS_SECRET_NOT_RECIPIENT');
    expect(refusedRekey.description).toContain('secrets/keys/eu.age');
    // SPEC §16 / issue 30: "reports `error` naming the secret and why" (soft: the checks below still run).
    expect.soft(refusedRekey.description, 'the refusal names a secret the plan reads').toMatch(/db_password|tls_key/);
    expect(h('eu-2').pidsOf()).toEqual(pids.get('eu-2'));

    await f.secretSet('db_password', ['eu'], V.db3);
    set.set('db_password v3 (after the revocation)', V.db3);
    const c7 = await f.push('a new db_password after the revocation');
    await f.waitApplied('eu-1', c7);
    await sees('eu-1', 'app', 'DB_PASSWORD', V.db3);
    expect(h('eu-1').pidsOf().app).not.toBe(pids.get('eu-1')!.app);
    const refused = await f.reported(c7, 'eu-2', 'error');
    expect(refused.description).toContain('KS_SECRET_NOT_RECIPIENT');
    expect.soft(refused.description, 'the refusal names a secret the plan reads').toMatch(/db_password|tls_key/);
    expect(h('eu-2').history()[0]).toMatchObject({ revision: c7, outcome: 'rejected' });
    expect(f.applied('eu-2')).toBe(before);
    expect(h('eu-2').pidsOf()).toEqual(pids.get('eu-2'));
    expect(shaFile('eu-2', 'app', 'DB_PASSWORD')).toBe(sha256(V.db2));
    await f.waitApplied(US, c7);
    expect(h(US).pidsOf()).toEqual(pids.get(US));

    // Not even root on eu-2 can: its identity opens neither the new key file, nor (through the old key, which it
    // could open) the value set after the rekey.
    const eu2 = parseAgeIdentityFile(readFileSync(f.ageKeyOf('eu-2'), 'utf8'));
    if ('problem' in eu2) throw new Error(eu2.problem);
    expect(await decryptWith([eu2.identity], readFileSync(join(f.fx.dir, 'secrets/keys/eu.age')))).toBeUndefined();
    const oldPlain = await decryptWith([eu2.identity], oldKeyFile);
    expect(oldPlain).toBeDefined();
    const oldTarget = parseAgeIdentityFile(new TextDecoder().decode(oldPlain));
    if ('problem' in oldTarget) throw new Error(oldTarget.problem);
    expect(
      await decryptWith([oldTarget.identity], readFileSync(join(f.fx.dir, 'secrets/db_password.age'))),
    ).toBeUndefined();

    // What the operator's listing says of it, for the last test's grep: names, targets, readers, never a value.
    for (const args of [['--json'], []]) {
      const ls = await keystonectl(['secret', 'ls', '--identity', f.operatorKey, ...args], f.fx.dir);
      expect(ls.code, ls.stderr).toBe(0);
      expect(ls.stdout).toContain('db_password');
      published.push({ where: `keystonectl secret ls ${args.join(' ')}`, text: ls.stdout + ls.stderr });
    }
  });

  it('no value in any log line, API answer, event, /metrics, state directory, Git object or ref on the server, or apply-dry output', async () => {
    expect(set.size).toBeGreaterThanOrEqual(5);
    const findings: Finding[] = [];
    const look = (where: string, text: string | Uint8Array) => findings.push(...findIn(where, text, set));

    // Positive control: the grep finds a value where it is meant to be.
    const appPid = h('eu-1').pidsOf().app!;
    expect(findIn('control', readFileSync(join(work('eu-1', 'app'), 'tls.key')), set).map((x) => x.value)).toEqual([
      'tls_key',
    ]);
    const environ = environOf(appPid);
    if (environ)
      expect(findIn('control', readFileSync(`/proc/${appPid}/environ`), set).map((x) => x.value)).toEqual([
        'db_password v3 (after the revocation)',
      ]);

    // 1. Every agent's log: every line on stdout, anything not JSON, stderr.
    for (const d of DEVICES) {
      const a = f.agents.get(d)!;
      expect(a.logs.length).toBeGreaterThan(20);
      look(`${d}'s log lines`, JSON.stringify(a.logs));
      look(`${d}'s non-JSON stdout`, a.rawLines.join('\n'));
      look(`${d}'s stderr`, a.stderr);
    }

    // 2. The API: every data route the dashboard reads, each component's view and log tail, /metrics, the page.
    for (const d of DEVICES) {
      const api = f.api(d);
      const get = async (path: string) => {
        const r = await api.get(path);
        const text = typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
        look(`${d} GET ${path}`, text);
        return r;
      };
      const list = await get('/v1/components');
      expect(list.status).toBe(200);
      for (const path of [
        '/v1/revision',
        '/v1/history',
        '/v1/history?limit=100',
        '/v1/graph',
        '/v1/policy',
        '/healthz',
        '/',
        '/v1/session',
      ])
        await get(path);
      for (const c of list.body as Array<{ name: string }>) {
        expect((await get(`/v1/components/${c.name}`)).status).toBe(200);
        await get(`/v1/logs/${c.name}?lines=5000`);
        await get(`/v1/logs/${c.name}?lines=5000&stderr=true`);
      }
      const metrics = await fetch(`http://127.0.0.1:${f.ports.get(d)!}/metrics`);
      expect(metrics.status).toBe(200);
      look(`${d} GET /metrics`, await metrics.text());
    }

    // 3. What was published along the way: the event stream, apply-dry (text and --json).
    expect(published.length).toBeGreaterThanOrEqual(4);
    for (const p of published) look(p.where, p.text);
    const events = published.find((p) => p.where.startsWith('GET /v1/events'))!;
    expect(events.text).toContain('event: hello');

    // 4. Every state directory, byte for byte (the SQLite database and its WAL, the Git caches object by object).
    for (const d of DEVICES) {
      const sd = h(d).stateDir;
      // The secret files' own directory is where values belong (on tmpfs here, in the state directory without one).
      const root = f.secretsRootOf(d);
      const r = await grepTree(sd, set, (p) => root !== undefined && (p === root || p.startsWith(root + '/')));
      expect(r.files).toBeGreaterThan(10);
      // What the store keeps instead: the placeholder as written (positive control of the same grep).
      if (d !== US)
        expect(
          (await grepTree(sd, new Map([['placeholder', '{{secret.db_password}}']]))).findings.length,
          `${d}'s store keeps the placeholder`,
        ).toBeGreaterThan(0);
      findings.push(...r.findings.map((x) => ({ ...x, where: `${d}'s state directory: ${x.where}` })));
    }

    // 5. The Git server: every object of both repositories (reachable or not), and a mirror clone of every ref over HTTP.
    for (const [name, bare] of [
      ['fleet', f.fleetBare],
      ['reports', f.reportsBare],
    ] as const) {
      look(`the server's ${name} repository (every object)`, await allGitObjects(bare));
      const mirror = join(mkdtempSync(join(f.root, 'mirror-')), `${name}.git`);
      await run(
        'git',
        ['clone', '--quiet', '--mirror', f.server.url(name).replace('http://', `http://x:${PUSH_TOKEN}@`), mirror],
        { env: GIT_ENV },
      );
      const refs = (await run('git', ['--git-dir', mirror, 'for-each-ref'], { env: GIT_ENV })).stdout;
      expect(refs.split('\n').filter(Boolean).length).toBeGreaterThan(0);
      look(`${name} mirror: refs`, refs);
      look(
        `${name} mirror: git log -p --all`,
        (
          await run('git', ['--git-dir', mirror, 'log', '-p', '--all', '--binary'], {
            env: GIT_ENV,
            maxBuffer: 256 * 1024 * 1024,
          })
        ).stdout,
      );
      look(`${name} mirror: every object`, await allGitObjects(mirror));
    }
    const notesRefs = (
      await run('git', ['--git-dir', f.reportsBare, 'for-each-ref', '--format=%(refname)', 'refs/notes/'], {
        env: GIT_ENV,
      })
    ).stdout;
    expect(notesRefs).toContain('refs/notes/');

    expect(findings).toEqual([]);
  });
});
