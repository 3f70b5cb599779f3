// Round trips with the real minisign 0.11 (/usr/bin/minisign) in both directions: its keys sign for Keystone,
// Keystone's keys sign for it, and each verifies the other's signatures, prehashed and legacy.
//
// A password-protected key at minisign's parameters costs 1 GiB and several seconds of scrypt per use, so this
// file spends exactly four such operations (minisign -G, keystonectl sign, keystonectl keygen, minisign -S), in
// the two tests marked SCRYPT. The other password tests use a minisign key re-encrypted here, in minisign's
// format, with cheap scrypt parameters stored in the key file (opslimit 32768, memlimit 16 MiB → N = 1024):
// both programs read the parameters from the file, and minisign itself decrypts that key below.
import { execFileSync } from 'node:child_process';
import { scryptSync } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blake2b } from '@noble/hashes/blake2.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCtl } from '../support/cli-run.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

const SCRYPT_TIMEOUT = 60_000;
const PW = 'correct horse';
/** The real minisign CLI, for the suites that run it (the keygen refusals below do not). */
const minisignCli = needs('minisign');

let dir: string; // a repository: the example's recipes and plans, nothing signed yet
let keys: string; // where keys live, outside the repository
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keystone-interop-'));
  keys = mkdtempSync(join(tmpdir(), 'keystone-interop-keys-'));
  for (const d of ['recipes', 'plans']) cpSync(join(PROJECT_ROOT, d), join(dir, d), { recursive: true });
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(keys, { recursive: true, force: true });
});

const k = (name: string) => join(keys, name);
const keyIdOf = (pubFile: string) => readFileSync(pubFile, 'utf8').split('\n')[0]!.split(' ').pop()!;
const b64Line = (file: string, line: number) => Buffer.from(readFileSync(file, 'utf8').split('\n')[line]!, 'base64');

function minisign(args: string[], opts: { input?: string; cwd?: string } = {}): string {
  // stderr is captured (minisign prints its prompts there); a failure throws with minisign's own message.
  return execFileSync('minisign', args, {
    cwd: opts.cwd ?? dir,
    input: opts.input ?? '',
    encoding: 'utf8',
    stdio: 'pipe',
  });
}

/** `minisign -Vm SHA256SUMS -p PUB` in the repository; throws when minisign refuses. */
function minisignVerifies(pub: string, ...extra: string[]): string {
  const out = minisign(['-Vm', 'SHA256SUMS', '-p', pub, ...extra]);
  expect(out).toContain('Signature and comment signature verified');
  return out;
}

/** SHA256SUMS as an operator without Keystone would write it: GNU sha256sum over every recipe and plan. */
function writeSumsWithSha256sum(): void {
  const files = ['recipes', 'plans'].flatMap((d) =>
    readdirSync(join(dir, d))
      .filter((f) => f.endsWith('.toml'))
      .map((f) => `${d}/${f}`),
  );
  writeFileSync(join(dir, 'SHA256SUMS'), execFileSync('sha256sum', files.sort(), { cwd: dir, encoding: 'utf8' }));
}

/** The signature algorithm of the first block: "ED" (prehashed, BLAKE2b-512) or "Ed" (legacy). */
const sigAlgorithm = () => b64Line(join(dir, 'SHA256SUMS.minisig'), 1).subarray(0, 2).toString('latin1');
const trustedComment = () => readFileSync(join(dir, 'SHA256SUMS.minisig'), 'utf8').split('\n')[2]!;

async function ksVerify(pub: string) {
  const r = await runCtl(['verify', '--repo', dir, '--trusted-key', pub, '--json'], '/');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { ok: boolean; signers: string[]; signedAt: number; files: string[] };
}

/**
 * Re-encrypts an unencrypted minisign secret key (as `minisign -G -W` writes it) with `password`, in minisign's
 * format, but with cheap scrypt parameters stored in the file. N = 1024 is worked out by hand from libsodium's
 * pickparams (opslimit 32768 < memlimit/32 = 524288 → maxN = 32768/32 = 1024 → N = 2^10) and is passed to
 * node:crypto directly, so the code under test is not used to make the key.
 */
function encryptCheaply(plainKeyFile: string, password: string, outFile: string): void {
  const raw = b64Line(plainKeyFile, 1);
  expect(raw.subarray(0, 6).toString('latin1')).toBe('Ed\0\0B2'); // unencrypted, BLAKE2b checksum
  const body = Buffer.from(raw.subarray(54, 158)); // key id (8) ‖ secret key (64) ‖ checksum (32)
  Buffer.from(blake2b(Buffer.concat([Buffer.from('Ed'), body.subarray(0, 72)]), { dkLen: 32 })).copy(body, 72);
  const salt = Buffer.alloc(32, 0x5a);
  const stream = scryptSync(password, salt, body.length, { N: 1024, r: 8, p: 1 });
  for (let i = 0; i < body.length; i++) body[i]! ^= stream[i]!;
  const params = Buffer.alloc(16);
  params.writeBigUInt64LE(32_768n, 0);
  params.writeBigUInt64LE(16n * 1024n * 1024n, 8);
  const out = Buffer.concat([Buffer.from('EdScB2', 'latin1'), salt, params, body]);
  writeFileSync(outFile, `untrusted comment: minisign encrypted secret key\n${out.toString('base64')}\n`, {
    mode: 0o600,
  });
}

describe.skipIf(minisignCli.skip)(minisignCli.title('minisign signs, Keystone verifies'), () => {
  it('a `minisign -G -W` key signs SHA256SUMS with -S (prehashed) and -S -l (legacy); keystonectl verify accepts both', async () => {
    minisign(['-G', '-W', '-p', k('ms.pub'), '-s', k('ms.key')]);
    writeSumsWithSha256sum();
    const id = keyIdOf(k('ms.pub'));

    minisign(['-S', '-s', k('ms.key'), '-m', 'SHA256SUMS']);
    expect(sigAlgorithm()).toBe('ED');
    const prehashed = await ksVerify(k('ms.pub'));
    expect(prehashed.signers).toEqual([id]);
    expect(prehashed.signedAt).toBe(Number(/timestamp:(\d+)/.exec(trustedComment())![1]));
    expect(prehashed.files).toContain('plans/edge.toml');

    minisign(['-S', '-l', '-s', k('ms.key'), '-m', 'SHA256SUMS']);
    expect(sigAlgorithm()).toBe('Ed');
    expect(trustedComment()).not.toContain('hashed');
    expect((await ksVerify(k('ms.pub'))).signers).toEqual([id]);

    // And the whole way through: apply-dry loads the minisign-signed repository (against nothing running: --empty,
    // so that an agent another program runs on this machine's default address is not asked).
    const r = await runCtl(
      ['apply-dry', 'plans/edge.toml', '--repo', dir, '--trusted-key', k('ms.pub'), '--empty', '--json'],
      '/',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).signature.signers).toEqual([id]);
  });
});

describe.skipIf(minisignCli.skip)(minisignCli.title('Keystone signs with minisign keys, minisign verifies'), () => {
  it('an unencrypted `minisign -G -W` key: keystonectl sign, prehashed and --legacy; minisign -Vm accepts both', async () => {
    minisign(['-G', '-W', '-p', k('ms.pub'), '-s', k('ms.key')]);
    const r = await runCtl(['sign', '--key', k('ms.key'), '--repo', dir], '/');
    expect(r.code, r.stderr).toBe(0);
    expect(sigAlgorithm()).toBe('ED');
    expect(minisignVerifies(k('ms.pub'), '-H')).toContain(
      `Trusted comment: ${trustedComment().slice('trusted comment: '.length)}`,
    );

    const legacy = await runCtl(['sign', '--key', k('ms.key'), '--repo', dir, '--legacy'], '/');
    expect(legacy.code, legacy.stderr).toBe(0);
    expect(sigAlgorithm()).toBe('Ed');
    minisignVerifies(k('ms.pub'));
    // -H requires a prehashed signature: minisign itself sees that this one is legacy.
    expect(() => minisignVerifies(k('ms.pub'), '-H')).toThrow(/Legacy \(non-prehashed\) signature/);
  });

  it(
    'SCRYPT: a password-protected `minisign -G` key, the password from --password-file; minisign -Vm accepts',
    async () => {
      minisign(['-G', '-p', k('enc.pub'), '-s', k('enc.key')], { input: `${PW}\n${PW}\n` }); // scrypt 1 of 4
      expect(b64Line(k('enc.key'), 1).subarray(2, 4).toString('latin1')).toBe('Sc');
      // A password file as an operator writes it, with a final newline that is not part of the password.
      writeFileSync(k('pw.txt'), `${PW}\n`, { mode: 0o600 });
      const r = await runCtl(
        ['sign', '--key', k('enc.key'), '--repo', dir, '--password-file', k('pw.txt'), '--json'],
        '/',
      ); // scrypt 2 of 4
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ keyId: keyIdOf(k('enc.pub')), algorithm: 'prehashed' });
      minisignVerifies(k('enc.pub'), '-H');
      expect((await ksVerify(k('enc.pub'))).signers).toEqual([keyIdOf(k('enc.pub'))]);
    },
    SCRYPT_TIMEOUT,
  );

  it('a password-protected minisign key (cheap scrypt), the password from KEYSTONE_KEY_PASSWORD: minisign and Keystone both sign with it', async () => {
    minisign(['-G', '-W', '-p', k('ms.pub'), '-s', k('plain.key')]);
    encryptCheaply(k('plain.key'), PW, k('ms.key'));
    writeSumsWithSha256sum();
    // minisign decrypts the key (so the format and the stored parameters are right) and signs.
    minisign(['-S', '-s', k('ms.key'), '-m', 'SHA256SUMS'], { input: `${PW}\n` });
    minisignVerifies(k('ms.pub'));
    await ksVerify(k('ms.pub'));
    // So does Keystone, with the password from the environment, legacy this time.
    const r = await runCtl(['sign', '--key', k('ms.key'), '--repo', dir, '--legacy'], '/', {
      env: { KEYSTONE_KEY_PASSWORD: PW },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(sigAlgorithm()).toBe('Ed');
    minisignVerifies(k('ms.pub'));
    await ksVerify(k('ms.pub'));
  });

  it('a wrong password (from the environment or a file) fails with KS_KEY_PASSWORD, exit 2, and writes no SHA256SUMS', async () => {
    minisign(['-G', '-W', '-p', k('ms.pub'), '-s', k('plain.key')]);
    encryptCheaply(k('plain.key'), PW, k('ms.key'));
    // minisign agrees that it is the wrong password.
    expect(() =>
      minisign(['-S', '-s', k('ms.key'), '-m', join(dir, 'plans/edge.toml'), '-x', k('x.minisig')], {
        input: 'wrong\n',
      }),
    ).toThrow(/Wrong password/);
    writeFileSync(k('wrong.txt'), 'wrong\n');
    const attempts: Array<{ args: string[]; env: Record<string, string> }> = [
      { args: [], env: { KEYSTONE_KEY_PASSWORD: 'wrong' } },
      { args: ['--password-file', k('wrong.txt')], env: {} },
    ];
    for (const { args, env } of attempts) {
      const r = await runCtl(['sign', '--key', k('ms.key'), '--repo', dir, ...args], '/', { env });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/wrong password/);
      expect(r.stderr).toContain('[KS_KEY_PASSWORD]');
      expect(existsSync(join(dir, 'SHA256SUMS'))).toBe(false);
      expect(existsSync(join(dir, 'SHA256SUMS.minisig'))).toBe(false);
    }
    // No password at all and no terminal to ask on: refused before anything is derived or written.
    const none = await runCtl(['sign', '--key', k('ms.key'), '--repo', dir], '/');
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/password-protected/);
    expect(existsSync(join(dir, 'SHA256SUMS'))).toBe(false);
  });
});

describe.skipIf(minisignCli.skip)(minisignCli.title('keystonectl keygen keys sign with minisign'), () => {
  it('a --no-password key: minisign -S signs, minisign -V verifies, minisign -R recreates the same public key', async () => {
    const r = await runCtl(['keygen', '--out', k('ks'), '--no-password', '--json'], '/');
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ keyId: keyIdOf(k('ks.pub')), encrypted: false });
    writeSumsWithSha256sum();
    minisign(['-S', '-s', k('ks.key'), '-m', 'SHA256SUMS']);
    minisignVerifies(k('ks.pub'), '-H');
    minisign(['-S', '-l', '-s', k('ks.key'), '-m', 'SHA256SUMS']);
    minisignVerifies(k('ks.pub'));
    expect((await ksVerify(k('ks.pub'))).signers).toEqual([out.keyId]);
    minisign(['-R', '-s', k('ks.key'), '-p', k('recreated.pub')]);
    expect(b64Line(k('recreated.pub'), 1)).toEqual(b64Line(k('ks.pub'), 1));
  });

  it(
    'SCRYPT: a password-protected key (KEYSTONE_KEY_PASSWORD): minisign -S decrypts it with the password piped, minisign -V verifies',
    async () => {
      const r = await runCtl(['keygen', '--out', k('ks'), '--json'], '/', { env: { KEYSTONE_KEY_PASSWORD: PW } }); // scrypt 3 of 4
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ encrypted: true });
      const raw = b64Line(k('ks.key'), 1);
      expect(raw.subarray(0, 6).toString('latin1')).toBe('EdScB2');
      expect(raw.readBigUInt64LE(38)).toBe(33_554_432n); // minisign's opslimit
      expect(raw.readBigUInt64LE(46)).toBe(1_073_741_824n); // and memlimit
      writeSumsWithSha256sum();
      minisign(['-S', '-s', k('ks.key'), '-m', 'SHA256SUMS'], { input: `${PW}\n` }); // scrypt 4 of 4
      minisignVerifies(k('ks.pub'), '-H');
      expect((await ksVerify(k('ks.pub'))).signers).toEqual([keyIdOf(k('ks.pub'))]);
    },
    SCRYPT_TIMEOUT,
  );
});

describe('keystonectl keygen: files and refusals', () => {
  it('writes the secret key with mode 0600 and refuses to overwrite either file without --force', async () => {
    expect((await runCtl(['keygen', '--out', k('a'), '--no-password'], '/')).code).toBe(0);
    expect(statSync(k('a.key')).mode & 0o777).toBe(0o600);
    expect(statSync(k('a.pub')).mode & 0o077 & ~0o044).toBe(0); // readable by others at most, never writable
    const before = [readFileSync(k('a.key'), 'utf8'), readFileSync(k('a.pub'), 'utf8')];

    const again = await runCtl(['keygen', '--out', k('a'), '--no-password'], '/');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('--force');
    expect([readFileSync(k('a.key'), 'utf8'), readFileSync(k('a.pub'), 'utf8')]).toEqual(before);

    // Only the public key left behind: still refused, and no secret key written beside it.
    rmSync(k('a.key'));
    expect((await runCtl(['keygen', '--out', k('a'), '--no-password'], '/')).code).toBe(2);
    expect(existsSync(k('a.key'))).toBe(false);

    const forced = await runCtl(['keygen', '--out', k('a'), '--no-password', '--force'], '/');
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(k('a.pub'), 'utf8')).not.toBe(before[1]);
    expect(statSync(k('a.key')).mode & 0o777).toBe(0o600);
  });

  it('an --out in a directory that does not exist is a usage error naming it (exit 2), not an unexpected failure', async () => {
    const r = await runCtl(['keygen', '--out', k('missing/dir/key'), '--no-password'], '/');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/directory of --out .*missing\/dir\/key does not exist/);
    expect(r.stderr).not.toContain('unexpected');
  });

  // Regression (was a bug): `keygen --force` writes over an existing PREFIX.key with writeFileSync(…, { mode: 0o600, flag: 'w' });
  // the mode only applies when the file is created, so a pre-existing world-readable file keeps mode 0644 and
  // the new secret key is readable by everyone (keygen.ts claims "never world-readable, not even briefly").
  it('keygen --force over an existing world-readable file still leaves the secret key 0600', async () => {
    writeFileSync(k('b.key'), 'old\n');
    chmodSync(k('b.key'), 0o644);
    const r = await runCtl(['keygen', '--out', k('b'), '--no-password', '--force'], '/');
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(k('b.key')).mode & 0o777).toBe(0o600);
  });

  it('without a password source and no terminal it refuses (exit 2, nothing written) unless --no-password', async () => {
    const r = await runCtl(['keygen', '--out', k('c')], '/');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('--no-password');
    expect(existsSync(k('c.key'))).toBe(false);
    expect(existsSync(k('c.pub'))).toBe(false);

    const ok = await runCtl(['keygen', '--out', k('c'), '--no-password'], '/');
    expect(ok.code, ok.stderr).toBe(0);
    expect(b64Line(k('c.key'), 1).subarray(2, 4)).toEqual(Buffer.from([0, 0])); // not encrypted
    expect(ok.stdout).toContain('not password-protected');
  });
});
