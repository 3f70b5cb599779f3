// The device's own keys (SPEC §15) on real files: made once with their modes, refused when another user could read or
// change them, when they do not parse, when half is gone or the state directory says the device had keys that are
// gone; made for a state directory of an earlier version. And read by the real tools: `minisign` signs with report.key
// and verifies with report.pub, `age-keygen -y` and `age -d` take age.key.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ageRecipientOf, parseAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import {
  ensureDeviceKeys,
  identityPaths,
  readDevicePublicIdentity,
  type EnsureDeviceKeysOptions,
} from '../../src/identity/device-keys.js';
import { IdentityError } from '../../src/identity/identity-error.js';
import { openStateDatabase } from '../../src/store/state-database.js';
import { formatPublicKey, formatSecretKey, generateKey, parsePublicKey } from '../../src/trust/minisign.js';
import { needs } from '../support/requirements.js';

const tools = needs('minisign', 'age');
const root = needs('root');
const NOBODY = 65534;

/** Repeatable randomness: byte i of the stream is (seed + i) mod 256. */
function counter(seed: number): (n: number) => Uint8Array {
  let at = seed;
  return (n) => Uint8Array.from({ length: n }, () => at++ & 0xff);
}

const NOW = Date.parse('2030-01-02T03:04:05.678Z');
const opts = (o: Partial<EnsureDeviceKeysOptions> = {}): EnsureDeviceKeysOptions => ({
  now: () => NOW,
  randomBytes: counter(7),
  create: true,
  ...o,
});
const mode = (p: string) => statSync(p).mode & 0o777;

/** The IdentityError `p` rejects with. */
async function refusal(p: Promise<unknown>): Promise<IdentityError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(IdentityError);
  return e as IdentityError;
}

let stateDir: string;
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'keystone-device-keys-'));
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

describe('ensureDeviceKeys', () => {
  it('makes the keys at the first call, 0700/0600 with a public key file, and finds the same ones afterwards', async () => {
    const paths = identityPaths(stateDir);
    const first = await ensureDeviceKeys(stateDir, opts());
    expect(first.created).toBe(true);
    expect(mode(paths.dir).toString(8)).toBe('700');
    expect(mode(paths.reportKey).toString(8)).toBe('600');
    expect(mode(paths.ageKey).toString(8)).toBe('600');
    expect(mode(paths.reportPub).toString(8)).toBe('644');
    expect(readdirSync(paths.dir).sort()).toEqual(['age.key', 'report.key', 'report.pub']);
    // Nothing but the identity and its marker: no temporary directory left behind.
    expect(readdirSync(stateDir).sort()).toEqual(['device.json', 'identity']);

    const { keys } = first;
    // The injected randomness: the seed is bytes 7…38, the key id the 8 after.
    expect(keys.reportKeyId).toBe(Buffer.from(Uint8Array.from({ length: 8 }, (_, i) => 39 + i)).toString('hex'));
    expect(keys.reportKeyId).toMatch(/^[0-9a-f]{16}$/);
    expect(keys.reportPublic).toMatch(/^RW[A-Za-z0-9+/]{54}$/);
    expect(readFileSync(paths.reportPub, 'utf8').split('\n')[1]).toBe(keys.reportPublic);
    expect(parsePublicKey(readFileSync(paths.reportPub, 'utf8')).publicKey).toEqual(keys.report.publicKey);
    expect(keys.ageRecipient).toMatch(/^age1[0-9a-z]{58}$/);
    expect(keys.ageIdentity).toMatch(/^AGE-SECRET-KEY-1[0-9A-Z]{58}$/);
    expect(readFileSync(paths.ageKey, 'utf8')).toBe(
      `# created: 2030-01-02T03:04:05Z\n# public key: ${keys.ageRecipient}\n${keys.ageIdentity}\n`,
    );
    expect(await identityToRecipient(keys.ageIdentity)).toBe(keys.ageRecipient);
    // The marker holds the public halves only.
    const marker = readFileSync(paths.marker, 'utf8');
    expect(JSON.parse(marker)).toEqual({
      identity: {
        reportKey: keys.reportPublic,
        reportKeyId: keys.reportKeyId,
        ageRecipient: keys.ageRecipient,
        created: '2030-01-02T03:04:05.678Z',
      },
    });
    expect(marker).not.toContain('AGE-SECRET-KEY');

    const again = await ensureDeviceKeys(stateDir, opts({ randomBytes: counter(99) }));
    expect(again.created).toBe(false);
    expect(again.keys).toEqual(keys);
    expect(await readDevicePublicIdentity(stateDir)).toEqual({
      reportKey: keys.reportPublic,
      reportKeyId: keys.reportKeyId,
      ageRecipient: keys.ageRecipient,
    });
  });

  it('two processes making the keys at once end with one identity', async () => {
    const [a, b] = await Promise.all([
      ensureDeviceKeys(stateDir, opts({ randomBytes: counter(1) })),
      ensureDeviceKeys(stateDir, opts({ randomBytes: counter(2) })),
    ]);
    expect(a.keys).toEqual(b.keys);
    expect((await ensureDeviceKeys(stateDir, opts({ create: false }))).keys).toEqual(a.keys);
    expect(readdirSync(stateDir).sort()).toEqual(['device.json', 'identity']);
  });

  it('a state directory of an earlier version (a store, a token, no keys and no marker) gets keys', async () => {
    openStateDatabase(stateDir, { now: () => NOW }).db.close();
    writeFileSync(join(stateDir, 'api-token'), `${'a'.repeat(64)}\n`, { mode: 0o600 });
    expect(await readDevicePublicIdentity(stateDir)).toBeUndefined();
    const r = await ensureDeviceKeys(stateDir, opts());
    expect(r.created).toBe(true);
    expect(existsSync(identityPaths(stateDir).reportKey)).toBe(true);
  });

  it('without create, no keys is KS_IDENTITY_MISSING, and reading the public halves writes nothing', async () => {
    expect(await readDevicePublicIdentity(stateDir)).toBeUndefined();
    const e = await refusal(ensureDeviceKeys(stateDir, opts({ create: false })));
    expect(e.code).toBe('KS_IDENTITY_MISSING');
    expect(e.message).toContain('has no identity yet');
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it.each([
    ['report.key', 0o644],
    ['age.key', 0o640],
    ['report.key', 0o660],
  ])('refuses %s with mode %o (KS_IDENTITY_UNSAFE), naming the file and the chmod', async (name, bad) => {
    await ensureDeviceKeys(stateDir, opts());
    const file = join(identityPaths(stateDir).dir, name);
    chmodSync(file, bad);
    for (const p of [ensureDeviceKeys(stateDir, opts()), readDevicePublicIdentity(stateDir)]) {
      const e = await refusal(p);
      expect(e.code).toBe('KS_IDENTITY_UNSAFE');
      expect(e.file).toBe(file);
      expect(e.message).toContain(`${file} can be read or written by other users (mode 0${bad.toString(8)})`);
      expect(e.message).toContain(`chmod 600 ${file}`);
    }
    chmodSync(file, 0o600);
    expect((await ensureDeviceKeys(stateDir, opts())).created).toBe(false);
  });

  it('refuses an identity directory with mode 0755, or a link in place of a key file', async () => {
    const paths = identityPaths(stateDir);
    await ensureDeviceKeys(stateDir, opts());
    chmodSync(paths.dir, 0o755);
    const e = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(e.code).toBe('KS_IDENTITY_UNSAFE');
    expect(e.file).toBe(paths.dir);
    expect(e.message).toContain(`(mode 0755)`);
    expect(e.message).toMatch(new RegExp(`: chmod 700 ${paths.dir}$`));
    chmodSync(paths.dir, 0o700);

    renameSync(paths.ageKey, join(stateDir, 'elsewhere.key'));
    execFileSync('ln', ['-s', join(stateDir, 'elsewhere.key'), paths.ageKey]);
    const link = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(link.code).toBe('KS_IDENTITY_UNSAFE');
    expect(link.message).toContain(`${paths.ageKey} is a symbolic link`);
  });

  it.skipIf(root.skip)(
    root.title('refuses key files and a directory owned by another user, naming the chown'),
    async () => {
      const paths = identityPaths(stateDir);
      await ensureDeviceKeys(stateDir, opts());
      chownSync(paths.reportKey, NOBODY, NOBODY);
      const e = await refusal(ensureDeviceKeys(stateDir, opts()));
      expect(e.code).toBe('KS_IDENTITY_UNSAFE');
      expect(e.message).toContain(`${paths.reportKey} is owned by uid ${NOBODY}`);
      expect(e.message).toContain(`chown root: ${paths.reportKey}`);
      chownSync(paths.reportKey, 0, 0);
      chownSync(paths.dir, NOBODY, NOBODY);
      const dir = await refusal(ensureDeviceKeys(stateDir, opts()));
      expect(dir.code).toBe('KS_IDENTITY_UNSAFE');
      expect(dir.message).toContain(`chown root: ${paths.dir}`);
    },
  );

  it('refuses key files that do not parse (KS_IDENTITY_MALFORMED), without quoting a secret', async () => {
    const paths = identityPaths(stateDir);
    const { keys } = await ensureDeviceKeys(stateDir, opts());
    const original = readFileSync(paths.ageKey, 'utf8');

    // One character of the identity changed: its checksum catches it.
    const flipped = keys.ageIdentity.slice(0, -1) + (keys.ageIdentity.endsWith('Q') ? 'P' : 'Q');
    writeFileSync(paths.ageKey, original.replace(keys.ageIdentity, flipped));
    let e = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(e.code).toBe('KS_IDENTITY_MALFORMED');
    expect(e.file).toBe(paths.ageKey);
    expect(e.message).toContain('is not an age identity file');
    expect(e.message).not.toContain(flipped.slice(16, 40));

    // A public key comment that is not the identity's own.
    const other = await generateX25519Identity();
    writeFileSync(paths.ageKey, original.replace(keys.ageRecipient, await identityToRecipient(other)));
    e = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(e.message).toContain('"# public key:" comment');
    writeFileSync(paths.ageKey, original);

    writeFileSync(paths.reportKey, 'untrusted comment: minisign secret key\nnot base64 at all\n');
    e = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(e.code).toBe('KS_IDENTITY_MALFORMED');
    expect(e.file).toBe(paths.reportKey);
    expect(e.message).toContain(`${paths.reportKey} is not the device's report key`);

    // A password-protected key cannot be the device's: the agent starts unattended. (Marked as scrypt-encrypted in
    // place: encrypting at minisign's parameters costs 1 GiB, and the refusal reads only the mark.)
    const raw = Buffer.from(
      (await formatSecretKey(generateKey(counter(3)), undefined, counter(4))).split('\n')[1]!,
      'base64',
    );
    raw.write('Sc', 2, 'latin1');
    writeFileSync(paths.reportKey, `untrusted comment: minisign encrypted secret key\n${raw.toString('base64')}\n`);
    e = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(e.code).toBe('KS_IDENTITY_MALFORMED');
    expect(e.message).toContain('password-protected');
  });

  it('report.pub: written again when removed; refused when it is another key', async () => {
    const paths = identityPaths(stateDir);
    const { keys } = await ensureDeviceKeys(stateDir, opts());
    const pub = readFileSync(paths.reportPub, 'utf8');
    rmSync(paths.reportPub);
    // Read-only readers leave it missing; a start writes it again.
    expect((await readDevicePublicIdentity(stateDir))?.reportKey).toBe(keys.reportPublic);
    expect(existsSync(paths.reportPub)).toBe(false);
    await ensureDeviceKeys(stateDir, opts());
    expect(readFileSync(paths.reportPub, 'utf8')).toBe(pub);

    writeFileSync(paths.reportPub, formatPublicKey(generateKey(counter(200))));
    const e = await refusal(ensureDeviceKeys(stateDir, opts()));
    expect(e.code).toBe('KS_IDENTITY_MALFORMED');
    expect(e.message).toContain(`${paths.reportPub} is not the public half of report.key`);
  });

  it.each(['report.key', 'age.key'])(
    'one half gone (%s): KS_IDENTITY_MISSING, nothing made in its place',
    async (name) => {
      const paths = identityPaths(stateDir);
      await ensureDeviceKeys(stateDir, opts());
      rmSync(join(paths.dir, name));
      const e = await refusal(ensureDeviceKeys(stateDir, opts()));
      expect(e.code).toBe('KS_IDENTITY_MISSING');
      expect(e.file).toBe(join(paths.dir, name));
      expect(e.message).toContain(`${join(paths.dir, name)} is missing while`);
      expect(existsSync(join(paths.dir, name))).toBe(false);
    },
  );

  it('the whole identity gone from a state directory that had one: KS_IDENTITY_MISSING, even with create; moving the marker aside makes new keys', async () => {
    const paths = identityPaths(stateDir);
    const { keys } = await ensureDeviceKeys(stateDir, opts());
    rmSync(paths.dir, { recursive: true });
    for (const p of [ensureDeviceKeys(stateDir, opts()), readDevicePublicIdentity(stateDir)]) {
      const e = await refusal(p);
      expect(e.code).toBe('KS_IDENTITY_MISSING');
      expect(e.message).toContain(
        `${paths.marker} says this device had one (report key ${keys.reportPublic}, age recipient ${keys.ageRecipient})`,
      );
      expect(e.message).toContain(`move ${paths.marker} aside`);
    }
    expect(existsSync(paths.dir)).toBe(false);
    // An emptied directory is the same.
    mkdirSync(paths.dir, { mode: 0o700 });
    expect((await refusal(ensureDeviceKeys(stateDir, opts()))).code).toBe('KS_IDENTITY_MISSING');

    renameSync(paths.marker, `${paths.marker}.old`);
    const fresh = await ensureDeviceKeys(stateDir, opts({ randomBytes: counter(50) }));
    expect(fresh.created).toBe(true);
    expect(fresh.keys.reportPublic).not.toBe(keys.reportPublic);
  });
});

describe('the age identity file', () => {
  it('the recipient node:crypto works out is the one age-encryption does, for many identities', async () => {
    for (let i = 0; i < 20; i++) {
      const id = await generateX25519Identity();
      expect(ageRecipientOf(id)).toBe(await identityToRecipient(id));
    }
    expect(ageRecipientOf('AGE-SECRET-KEY-1')).toBeUndefined();
    expect(ageRecipientOf('age1qqqq')).toBeUndefined();
    expect(parseAgeIdentityFile('# only a comment\n')).toEqual({
      problem: 'it holds no identity (no AGE-SECRET-KEY-1… line)',
    });
  });
});

describe.skipIf(tools.skip)(tools.title('the real tools read the device keys'), () => {
  it('minisign signs with report.key (no password asked) and verifies with report.pub; age-keygen -y prints ageRecipient; age -d decrypts', async () => {
    const paths = identityPaths(stateDir);
    const { keys } = await ensureDeviceKeys(stateDir, {
      now: Date.now,
      randomBytes: (n) => new Uint8Array(randomBytes(n)),
      create: true,
    });
    const msg = join(stateDir, 'report.txt');
    writeFileSync(msg, 'device gw-1 commit abc success\n');
    execFileSync('minisign', ['-S', '-s', paths.reportKey, '-m', msg], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = execFileSync('minisign', ['-V', '-p', paths.reportPub, '-m', msg], { encoding: 'utf8' });
    expect(out).toContain('Signature and comment signature verified');

    expect(execFileSync('age-keygen', ['-y', paths.ageKey], { encoding: 'utf8' })).toBe(`${keys.ageRecipient}\n`);
    const sealed = join(stateDir, 'secret.age');
    execFileSync('age', ['-r', keys.ageRecipient, '-o', sealed], { input: 's3cret\n' });
    expect(execFileSync('age', ['-d', '-i', paths.ageKey, sealed], { encoding: 'utf8' })).toBe('s3cret\n');
  });

  it('keys the tools made are the device keys too: minisign -G -W and age-keygen', async () => {
    const paths = identityPaths(stateDir);
    mkdirSync(paths.dir, { mode: 0o700 });
    execFileSync('minisign', ['-G', '-W', '-s', paths.reportKey, '-p', paths.reportPub], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    execFileSync('age-keygen', ['-o', paths.ageKey], { stdio: ['ignore', 'pipe', 'pipe'] });
    chmodSync(paths.reportKey, 0o600);
    chmodSync(paths.ageKey, 0o600);
    const r = await ensureDeviceKeys(stateDir, opts());
    expect(r.created).toBe(false);
    expect(r.keys.reportPublic).toBe(readFileSync(paths.reportPub, 'utf8').split('\n')[1]);
    expect(r.keys.ageRecipient).toBe(execFileSync('age-keygen', ['-y', paths.ageKey], { encoding: 'utf8' }).trim());
  });
});
