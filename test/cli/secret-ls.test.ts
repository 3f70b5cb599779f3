// `keystonectl secret ls` and `secret rm` in-process on a real checkout, and the way to a device: `keystonectl sign`
// lists secrets/**, and a device (SecretOpener over the verified reader of the signed directory) reads its target's
// secrets, refuses another target's and a secret added after signing. No value is ever printed.
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encryptTo } from '../../src/secrets/age-codec.js';
import { SecretOpener } from '../../src/secrets/open-secrets.js';
import { digestKeyOf } from '../../src/secrets/secret-digest.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { buildKeyring } from '../../src/trust/keyring.js';
import { formatPublicKey } from '../../src/trust/minisign.js';
import { VerifiedReader, verifyRevision } from '../../src/trust/verify-revision.js';
import { SecretRepo, SIGN_KEY } from '../secrets/secret-fixture.js';

const DB = 'db-value-7f3a';
const TLS = 'tls-value-91c2';
const LAB = 'lab-value-5d0e';
const VALUES = [DB, TLS, LAB];

const RECIPE = `name = "db"
[lifecycle.run]
exec = { command = "/bin/db" }
env = { DB_PASSWORD = "{{ secret.db_password }}", TOKEN = "{{secret.api_token}}" }
[[lifecycle.run.secrets]]
name = "tls_key"
path = "tls.key"
`;

let repo: SecretRepo;
beforeEach(async () => {
  repo = await SecretRepo.create();
  repo.write('recipes/db.toml', RECIPE);
  repo.write('plans/lab.toml', 'components = ["db"]\n[config.db]\npassword = "{{secret.lab_only}}"\n');
  for (const [name, targets, value] of [
    ['db_password', ['edge'], DB],
    ['tls_key', ['edge', 'lab'], TLS],
    ['lab_only', ['lab'], LAB],
  ] as const) {
    const r = await repo.set(name, [...targets], value, name === 'tls_key' ? ['--binary'] : []);
    expect(r.code, r.stderr).toBe(0);
    // Signed after each: a key made by one `secret set` is used by the next only once signed.
    await repo.sign();
  }
});
afterEach(() => repo.cleanup());

const noValue = (out: string) => {
  for (const v of VALUES) expect(out).not.toContain(v);
};

describe('keystonectl secret ls', () => {
  it('with the operator identity: each secret, its targets and their readers, its users; what is missing; never a value', async () => {
    const r = await repo.ctl(['secret', 'ls', '--identity', repo.operator.keyFile]);
    expect(r.code, r.stderr).toBe(0);
    noValue(r.stdout + r.stderr);
    expect(r.stdout).toMatch(/^db_password {2}secrets\/db_password\.age {2}armored, \d+ bytes, 1 recipient$/m);
    expect(r.stdout).toContain('  read by: edge (edge-1, edge-2)\n  used by: recipes/db.toml');
    expect(r.stdout).toMatch(
      /^tls_key {2}secrets\/tls_key\.age {2}binary, \d+ bytes, 2 recipients\n {2}read by: edge \(edge-1, edge-2\); lab \(lab-1\)\n {2}used by: recipes\/db\.toml$/m,
    );
    expect(r.stdout).toContain('  read by: lab (lab-1)\n  used by: plans/lab.toml');
    expect(r.stdout).toContain('missing: secret api_token (used by recipes/db.toml) has no secrets/api_token.age');
    expect(r.stdout).toMatch(
      /^ {2}edge: recipient age1\w+; readers: edge-1, edge-2; operators: 1; key opened with your identity$/m,
    );
    expect(r.stdout).toContain('  empty: no key yet (keystonectl secret set NAME --target empty makes one)');

    const json = await repo.ctl(['secret', 'ls', '--json'], undefined, {
      env: { KEYSTONE_AGE_IDENTITY: repo.operator.keyFile },
    });
    expect(json.code, json.stderr).toBe(0);
    noValue(json.stdout + json.stderr);
    const doc = JSON.parse(json.stdout);
    expect(doc.identity.recipients).toEqual([repo.operator.recipient]);
    expect(
      doc.secrets.map(
        (s: { name: string; targets: string[]; format: string; otherRecipients: number; usedBy: string[] }) => [
          s.name,
          s.format,
          s.targets,
          s.otherRecipients,
          s.usedBy,
        ],
      ),
    ).toEqual([
      ['db_password', 'armored', ['edge'], 0, ['recipes/db.toml']],
      ['lab_only', 'armored', ['lab'], 0, ['plans/lab.toml']],
      ['tls_key', 'binary', ['edge', 'lab'], 0, ['recipes/db.toml']],
    ]);
    expect(doc.missing).toEqual([{ name: 'api_token', usedBy: ['recipes/db.toml'] }]);
    expect(doc.targets.find((t: { name: string }) => t.name === 'lab')).toMatchObject({
      inFleet: true,
      readers: ['lab-1'],
      operators: 1,
      keyFile: true,
      opened: true,
    });
  });

  it('without an identity: the targets are unknown, and it says how to tell', async () => {
    const r = await repo.ctl(['secret', 'ls']);
    expect(r.code, r.stderr).toBe(0);
    noValue(r.stdout + r.stderr);
    expect(r.stdout).toContain('  read by: unknown (no operator identity; see below)');
    expect(r.stdout).toContain(
      'note: which targets read each secret is unknown: give --identity FILE (or KEYSTONE_AGE_IDENTITY=FILE)',
    );
    // A secret for a recipient no target key opens shows as such.
    repo.write('secrets/stray.age', await encryptTo([repo.device('lab-1').recipient], new TextEncoder().encode('x')));
    const withId = await repo.ctl(['secret', 'ls', '--identity', repo.operator.keyFile]);
    expect(withId.stdout).toContain('stray  secrets/stray.age  armored');
    expect(withId.stdout).toContain('  read by: 1 other recipient your identity cannot tell');
  });
});

describe('keystonectl secret rm', () => {
  it('removes the file and warns when a recipe or plan still uses it', async () => {
    const r = await repo.ctl(['secret', 'rm', 'db_password']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('removed secrets/db_password.age');
    expect(r.stderr).toContain(
      'warning: recipes/db.toml still uses secret db_password: devices refuse a revision that reads a secret it does not hold',
    );
    expect((await repo.ctl(['secret', 'ls'])).stdout).toContain(
      'missing: secret db_password (used by recipes/db.toml)',
    );
    const again = await repo.ctl(['secret', 'rm', 'db_password']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('there is no secrets/db_password.age');
    expect(again.stderr).toContain('[KS_SECRET_MISSING]');
    repo.write('secrets/unused.age', repo.read('secrets/lab_only.age'));
    const quiet = await repo.ctl(['secret', 'rm', 'unused']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });
});

describe('signing secrets/ and a device reading them', () => {
  it('sign lists every secrets/ file; a device of the target reads its secret through the signed set', async () => {
    repo.write('secrets/notes.md', 'not a secret file\n');
    const signed = await repo.ctl(['sign', '--key', join(repo.root, 'keys/sign.key'), '--json']);
    expect(signed.code, signed.stderr).toBe(0);
    const files: string[] = JSON.parse(signed.stdout).files;
    expect(files.filter((f) => f.startsWith('secrets/'))).toEqual([
      'secrets/db_password.age',
      'secrets/keys/edge.age',
      'secrets/keys/lab.age',
      'secrets/lab_only.age',
      'secrets/operators.txt',
      'secrets/recipients/edge.txt',
      'secrets/recipients/lab.txt',
      'secrets/tls_key.age',
    ]);
    expect(files).toContain('devices/revoked.toml');
    const verify = await repo.ctl(['verify', '--trusted-key', join(repo.root, 'keys/sign.pub')]);
    expect(verify.code, verify.stderr).toBe(0);

    const keyring = buildKeyring([{ source: 'sign.pub', text: formatPublicKey(SIGN_KEY) }]);
    const raw = new DirectoryReader(repo.dir);
    const reader = new VerifiedReader(raw, await verifyRevision(raw, { keyring, now: Math.floor(Date.now() / 1000) }));
    const device = (name: string) =>
      new SecretOpener({ ageIdentity: repo.device(name).identity, digestKey: digestKeyOf(repo.device(name).identity) });
    const opened = await device('edge-1').open(reader, ['db_password', 'tls_key'], 'edge');
    expect([...opened.values.values()].map((v) => new TextDecoder().decode(v)).sort()).toEqual([DB, TLS]);
    expect(
      new TextDecoder().decode((await device('lab-1').open(reader, ['tls_key'], 'lab')).values.values().next().value!),
    ).toBe(TLS);
    // Another target's secret, a revoked device, a secret added after signing: refused.
    await expect(device('lab-1').open(reader, ['db_password'], 'lab')).rejects.toMatchObject({
      code: 'KS_SECRET_NOT_RECIPIENT',
      secret: 'db_password',
    });
    await expect(device('edge-3').open(reader, ['db_password'], 'edge')).rejects.toMatchObject({
      code: 'KS_SECRET_NOT_RECIPIENT',
    });
    repo.write('secrets/late.age', repo.read('secrets/db_password.age'));
    await expect(device('edge-1').open(reader, ['late'], 'edge')).rejects.toMatchObject({ code: 'KS_FILE_NOT_SIGNED' });
    // A ciphertext swapped after signing refuses the whole set.
    repo.write('secrets/db_password.age', repo.read('secrets/lab_only.age'));
    await expect(verifyRevision(raw, { keyring, now: Math.floor(Date.now() / 1000) })).rejects.toMatchObject({
      code: 'KS_DIGEST_MISMATCH',
      file: 'secrets/db_password.age',
    });
  });

  it('a secrets/ link out of the repository is listed and refused, as a recipe link is', async () => {
    symlinkSync(join(repo.root, 'keys/sign.key'), repo.path('secrets/leak.age'));
    const r = await repo.ctl(['sign', '--key', join(repo.root, 'keys/sign.key')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('cannot sign secrets/leak.age');
  });
});
