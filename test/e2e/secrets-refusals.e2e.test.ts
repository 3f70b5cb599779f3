// The refusals of SPEC §16 / issue 30 point 6 that test/e2e/secrets.e2e.test.ts does not take through real agents
// (it has the wrong target and the revoked device): a device that cannot open what its plan reads — it is not a
// recipient of its target's key, it is in no target, the secret's file is missing, or it is corrupt (truncated, or
// garbage, yet listed in SHA256SUMS and signed) — refuses the revision like an invalid one: its history says
// `rejected`, the revision it runs stays the one before, nothing is stopped or started (the same pids), and its
// report is `error` naming the secret and why; no value appears in any of its log lines, its API or its reports.
//
// The same fleet as there (test/support/secret-fleet.ts: real agents over a real Git server, the operator's secrets
// made by the built `keystonectl secret`): fleet.toml puts region=eu in target eu. eu-1 is enrolled before eu's key is
// made; late-1 (region=eu) after it, and nobody rewraps it; lone-1 (region=asia) is in no target and is given its plan
// (`--plan plans/lone.toml`), the only way a device in no target gets to the secrets at all (without --plan it refuses
// every revision with KS_FLEET_NO_TARGET before).
import { armor } from 'age-encryption';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { decryptWith } from '../../src/secrets/age-codec.js';
import { until } from '../support/composite-fixture.js';
import {
  findIn,
  planOf,
  realpathOrUndefined,
  SecretFleet,
  secretReaderRecipe,
  sha256,
  type Finding,
} from '../support/secret-fleet.js';

const EU = 'eu-1';
const LATE = 'late-1';
const LONE = 'lone-1';
const DEVICES = [EU, LATE, LONE];

const random = (what: string) => `${what}-${randomBytes(30).toString('base64url')}`;
const DB = random('db');
const TLS_BODY = randomBytes(48).toString('base64');
const TLS = `-----BEGIN PRIVATE KEY-----\n${TLS_BODY}\n-----END PRIVATE KEY-----\n`;
/** What the last test looks for, by label. */
const VALUES = new Map([
  ['db_password', DB],
  ['tls_key', TLS_BODY],
]);

const FLEET = `[[targets]]
name = "eu"
selector = { region = "eu" }
plan = "plans/eu.toml"
`;

let f: SecretFleet;
/** Every commit pushed, in order (the last test reads each device's report on each). */
const commits: string[] = [];
/** The bytes `keystonectl secret set` wrote, to put back after a test removed or damaged them. */
const original = new Map<string, Buffer>();
/** Every device's pids, as last checked. */
const pids = new Map<string, Record<string, number>>();

const h = (d: string) => f.h(d);
const secretFile = (name: string) => join(f.fx.dir, 'secrets', `${name}.age`);
const shaFile = (d: string, c: string, file: string) => {
  try {
    return readFileSync(join(h(d).workDir(c), `${file}.sha`), 'utf8').trim();
  } catch {
    return undefined;
  }
};
const sees = (d: string, c: string, file: string, value: string) =>
  until(
    () => shaFile(d, c, file) === sha256(value) || undefined,
    20_000,
    `${d}'s ${c} to write the sha256 of the expected ${file}`,
  );

/** The binary age file an armored one holds (`keystonectl secret set` writes armored files). */
function binaryOf(armored: Buffer): Uint8Array {
  const text = armored.toString('utf8');
  expect(text.startsWith('-----BEGIN AGE ENCRYPTED FILE-----')).toBe(true);
  return armor.decode(text);
}

/** Whether the device's own age identity (what root on it holds) opens `file`. */
async function opens(device: string, file: Uint8Array): Promise<boolean> {
  const id = parseAgeIdentityFile(readFileSync(f.ageKeyOf(device), 'utf8'));
  if ('problem' in id) throw new Error(id.problem);
  return (await decryptWith([id.identity], file)) !== undefined;
}

/** f.start (the same flags), with `--plan`: the agent runs that plan, whatever fleet.toml says of the device. */
function startWithPlan(device: string, plan: string) {
  const harness = h(device);
  const start = harness.start.bind(harness);
  harness.start = (o) => start({ ...o, plan });
  return f.start(device);
}

/**
 * `device` refused `commit` like an invalid revision: `error` naming `secret` with `code`, history `rejected`, the
 * revision it ran before still applied, its components the same processes, none of `absent` running.
 */
async function refused(
  device: string,
  commit: string,
  o: { code: string; secret: string; why: RegExp; before: string; absent?: string[] },
) {
  const note = await f.reported(commit, device, 'error');
  await until(
    () => h(device).history()[0]?.revision === commit || undefined,
    10_000,
    `${device}'s history row of ${commit.slice(0, 8)}`,
  );
  expect(note.description).toContain(o.code);
  expect(note.description).toMatch(new RegExp(`secret [^:]*\\b${o.secret}\\b`));
  expect(note.description).toMatch(o.why);
  expect(h(device).history()[0]).toMatchObject({ revision: commit, outcome: 'rejected' });
  expect(h(device).history()[0]!.summary).toContain(o.code);
  expect(f.applied(device)).toBe(o.before);
  expect(h(device).pidsOf(), `${device}'s pids`).toEqual(pids.get(device));
  for (const c of o.absent ?? []) expect(h(device).processesOf(c), `${device} runs no ${c}`).toEqual([]);
  // Its own log says why too (the value in none of its lines: the last test).
  expect(
    f.agents.get(device)!.lines((l) => JSON.stringify(l).includes(o.code)).length,
    `${device} logs ${o.code}`,
  ).toBeGreaterThan(0);
  return note;
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
  // At first no plan reads a secret: every device runs `plain`, so that a refusal later has something to keep running.
  f.files.set('plans/eu.toml', planOf(['plain']));
  f.files.set('plans/lone.toml', planOf(['plain']));
  await f.enrol({ name: EU, labels: { region: 'eu' } });
  await f.enrol({ name: LONE, labels: { region: 'asia' } });
  await f.secretSet('db_password', ['eu'], DB);
  await f.secretSet('tls_key', ['eu'], TLS, { viaFile: true });
  for (const n of ['db_password', 'tls_key']) original.set(n, readFileSync(secretFile(n)));
  // late-1 is enrolled after eu's key was made, and the key is not rewrapped: it is not one of its recipients.
  await f.enrol({ name: LATE, labels: { region: 'eu' } });
  const keyFile = readFileSync(join(f.fx.dir, 'secrets', 'keys', 'eu.age'));
  expect(await opens(EU, keyFile), "eu-1's identity opens eu's key file").toBe(true);
  expect(await opens(LATE, keyFile), "late-1's identity does not open eu's key file").toBe(false);
  const c1 = await f.push('plain everywhere, two secrets of eu no plan reads yet');
  commits.push(c1);
  f.start(EU);
  f.start(LATE);
  startWithPlan(LONE, 'plans/lone.toml');
  await Promise.all(DEVICES.map((d) => f.reported(c1, d, 'success', 45_000)));
  for (const d of DEVICES) {
    expect(Object.keys(h(d).pidsOf())).toEqual(['plain']);
    pids.set(d, h(d).pidsOf());
  }
}, 90_000);

afterAll(async () => {
  await f?.cleanup();
});

describe(
  'secrets a device cannot open: the revision is refused, nothing stopped or started (SPEC §16)',
  { timeout: 60_000 },
  () => {
    it("not a recipient: a device enrolled after its target's key was made refuses the plan that reads a secret; eu-1 applies it", async () => {
      f.files.set('plans/eu.toml', planOf(['plain', 'app']));
      const before = commits.at(-1)!;
      const c2 = await f.push('eu runs app, which reads db_password and tls_key');
      commits.push(c2);
      await f.waitApplied(EU, c2);
      await sees(EU, 'app', 'DB_PASSWORD', DB);
      await sees(EU, 'app', 'tls.key', TLS);
      const now = h(EU).pidsOf();
      expect(now.plain).toBe(pids.get(EU)!.plain);
      pids.set(EU, now);

      await refused(LATE, c2, {
        code: 'KS_SECRET_NOT_RECIPIENT',
        secret: 'db_password',
        why: /not a recipient of secrets\/keys\/eu\.age/,
        before,
        absent: ['app'],
      });
      // lone-1's plan did not change: it takes the commit, nothing restarts.
      await f.waitApplied(LONE, c2);
      expect(h(LONE).pidsOf()).toEqual(pids.get(LONE));
    });

    it('in no target: a device given a plan that reads a secret, and that no fleet.toml target takes, refuses it', async () => {
      f.files.set('plans/lone.toml', planOf(['plain', 'app']));
      const before = f.applied(LONE)!;
      const c3 = await f.push('lone runs app too');
      commits.push(c3);
      await refused(LONE, c3, {
        code: 'KS_SECRET_NO_TARGET',
        secret: 'db_password',
        why: /in no fleet\.toml target/,
        before,
        absent: ['app'],
      });
      // eu-1's plan did not change: nothing restarts there.
      await f.waitApplied(EU, c3);
      expect(h(EU).pidsOf()).toEqual(pids.get(EU));
      f.files.set('plans/lone.toml', planOf(['plain']));
    });

    it('missing: secrets/tls_key.age is taken out of the commit; eu-1 refuses, app keeps running with its file', async () => {
      const before = f.applied(EU)!;
      const link = join(h(EU).workDir('app'), 'tls.key');
      const file = realpathOrUndefined(link);
      expect(file).toBeDefined();
      const c4 = await f.push('tls_key removed (lone back to plain)', () => rmSync(secretFile('tls_key')));
      commits.push(c4);
      expect(readFileSync(join(f.fx.dir, 'SHA256SUMS'), 'utf8')).not.toContain('secrets/tls_key.age');
      await refused(EU, c4, {
        code: 'KS_SECRET_MISSING',
        secret: 'tls_key',
        why: /secrets\/tls_key\.age is not in this revision/,
        before,
      });
      expect(realpathOrUndefined(link)).toBe(file);
      expect(readFileSync(file!).equals(Buffer.from(TLS))).toBe(true);
      expect(shaFile(EU, 'app', 'DB_PASSWORD')).toBe(sha256(DB));
      // lone-1 runs plain again: the commit is not refused there (it reads no secret now), and plain never restarted.
      await f.waitApplied(LONE, c4);
      expect(h(LONE).pidsOf()).toEqual(pids.get(LONE));
    });

    it.each([
      // The binary age file inside the armor, its payload cut short: the header (and the stanza to eu) intact.
      {
        what: 'truncated payload',
        damage: (b: Buffer) => Buffer.from(binaryOf(b).subarray(0, -16)),
        why: /damaged age file/,
      },
      { what: 'truncated armor', damage: (b: Buffer) => b.subarray(0, b.length - 24), why: /damaged armor/ },
      {
        what: 'garbage after an age header',
        damage: (b: Buffer) => Buffer.concat([Buffer.from('age-encryption.org/v1\n-> X25519 '), randomBytes(b.length)]),
        why: /damaged age file/,
      },
      { what: 'not an age file', damage: (b: Buffer) => randomBytes(b.length), why: /not an age file/ },
    ])(
      'corrupt ($what), yet listed in SHA256SUMS and signed: eu-1 refuses, naming db_password',
      async ({ what, damage, why }) => {
        const before = f.applied(EU)!;
        const bad = damage(original.get('db_password')!);
        const c = await f.push(`db_password ${what}`, () => {
          writeFileSync(secretFile('tls_key'), original.get('tls_key')!);
          writeFileSync(secretFile('db_password'), bad);
        });
        commits.push(c);
        // Signed as it is: the refusal is the file's content, not a signature (that would be KS_FILE_NOT_SIGNED).
        expect(readFileSync(join(f.fx.dir, 'SHA256SUMS'), 'utf8')).toContain(`${sha256(bad)}  secrets/db_password.age`);
        const note = await refused(EU, c, {
          code: 'KS_SECRET_CORRUPT',
          secret: 'db_password',
          why: /secrets\/db_password\.age/,
          before,
        });
        expect(note.description).toMatch(why);
        expect(note.description).not.toContain('KS_FILE_NOT_SIGNED');
        expect(shaFile(EU, 'app', 'DB_PASSWORD')).toBe(sha256(DB));
        await f.waitApplied(LONE, c);
        expect(h(LONE).pidsOf()).toEqual(pids.get(LONE));
      },
    );

    it('the files put back, eu-1 applies the next commit and restarts nothing (the same values)', async () => {
      const c = await f.push('db_password put back', () =>
        writeFileSync(secretFile('db_password'), original.get('db_password')!),
      );
      commits.push(c);
      await f.waitApplied(EU, c);
      await f.reported(c, EU, 'success');
      expect(h(EU).pidsOf()).toEqual(pids.get(EU));
      // late-1 still is not a recipient: it refuses every commit whose plan reads a secret, and still runs plain.
      await refused(LATE, c, {
        code: 'KS_SECRET_NOT_RECIPIENT',
        secret: 'db_password',
        why: /not a recipient/,
        before: commits[0]!,
        absent: ['app'],
      });
    });

    it("no value in any agent's log line, stderr, report, or API answer (history and components included)", async () => {
      const findings: Finding[] = [];
      const look = (where: string, text: string | Uint8Array) => findings.push(...findIn(where, text, VALUES));
      // Positive control: the grep finds the values where they belong.
      expect(
        findIn('control', readFileSync(join(h(EU).workDir('app'), 'tls.key')), VALUES).map((x) => x.value),
      ).toEqual(['tls_key']);

      for (const d of DEVICES) {
        const a = f.agents.get(d)!;
        expect(a.logs.length).toBeGreaterThan(10);
        look(`${d}'s log lines`, JSON.stringify(a.logs));
        look(`${d}'s non-JSON stdout`, a.rawLines.join('\n'));
        look(`${d}'s stderr`, a.stderr);
        for (const c of commits) {
          const note = await f.note(c, d);
          if (note) look(`${d}'s report on ${c.slice(0, 8)}`, JSON.stringify(note));
        }
        const api = f.api(d);
        for (const path of [
          '/v1/revision',
          '/v1/history?limit=100',
          '/v1/components',
          '/v1/components/plain',
          '/v1/logs/plain?lines=5000',
          '/healthz',
        ]) {
          const r = await api.get(path);
          expect(r.status, `${d} GET ${path}`).toBe(200);
          look(`${d} GET ${path}`, typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
        }
        const metrics = await fetch(`http://127.0.0.1:${f.ports.get(d)!}/metrics`);
        expect(metrics.status).toBe(200);
        look(`${d} GET /metrics`, await metrics.text());
      }
      // The history the API shows holds the refusals (what the grep above read is the text that names them).
      const history = JSON.stringify((await f.api(EU).get('/v1/history?limit=100')).body);
      for (const code of ['KS_SECRET_MISSING', 'KS_SECRET_CORRUPT']) expect(history).toContain(code);
      expect(JSON.stringify((await f.api(LONE).get('/v1/history?limit=100')).body)).toContain('KS_SECRET_NO_TARGET');
      expect(JSON.stringify((await f.api(LATE).get('/v1/history?limit=100')).body)).toContain(
        'KS_SECRET_NOT_RECIPIENT',
      );
      expect(existsSync(join(h(EU).workDir('app'), 'tls.key'))).toBe(true);
      expect(findings, findings.map((x) => `${x.value} in ${x.where}`).join('\n')).toEqual([]);
    });
  },
);
