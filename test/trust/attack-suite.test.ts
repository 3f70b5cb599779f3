// One test per threat against a signed copy of the example repository: each is refused as a whole, with
// its own code, exit code 2, the file (and key) named, and nothing but the JSON error on stdout.
import { execFileSync } from 'node:child_process';
import { appendFileSync, copyFileSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { blake2b } from '@noble/hashes/blake2.js';
import nacl from 'tweetnacl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { buildKeyring } from '../../src/trust/keyring.js';
import type { TrustCode } from '../../src/trust/trust-error.js';
import { TrustError } from '../../src/trust/trust-error.js';
import { MAX_SIGNATURE_BYTES, verifyRevision } from '../../src/trust/verify-revision.js';
import { runCtl, type CliResult } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

const PLAN = 'plans/edge.toml';
const SIG = 'SHA256SUMS.minisig';
const SUMS = 'SHA256SUMS';
/** The real minisign CLI signs with a timestamp-less trusted comment, which keystonectl cannot produce. */
const minisign = needs('minisign');
/** The order of the Ed25519 group. */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

let repo: ExampleRepo;
beforeEach(async () => {
  repo = await exampleRepo();
});
afterEach(() => repo.cleanup());

const path = (file: string) => join(repo.dir, file);
const keyPath = (name: string, ext: 'key' | 'pub') => join(repo.keyDir, `${name}.${ext}`);
/** minisign's key id (upper-case hex) as the public key file's comment line names it. */
const keyIdOf = (pubFile: string) => readFileSync(pubFile, 'utf8').split('\n')[0]!.split(' ').pop()!;
const testKeyId = () => keyIdOf(keyPath('test', 'pub'));

function flipByte(file: string, offset: number, mask = 0x01): void {
  const bytes = readFileSync(path(file));
  bytes[offset]! ^= mask;
  writeFileSync(path(file), bytes);
}

/** The 4 lines of the first signature block, and a writer that puts them back. */
function sigLines(): string[] {
  return readFileSync(path(SIG), 'utf8').split('\n');
}
function writeSigLines(lines: string[]): void {
  writeFileSync(path(SIG), lines.join('\n'));
}
/** Decodes the signature line (alg ‖ key id ‖ R ‖ S), lets `fn` change it, and re-encodes it. */
function editSignatureBytes(fn: (raw: Buffer) => void, line = 1): void {
  const lines = sigLines();
  const raw = Buffer.from(lines[line]!, 'base64');
  fn(raw);
  lines[line] = raw.toString('base64');
  writeSigLines(lines);
}
const signedAt = () => Number(/timestamp:(\d+)/.exec(sigLines()[2]!)![1]);

/** Every file of the repository (but .git) with its content, to prove a refusal changed nothing. */
function snapshot(): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(repo.dir, { recursive: true, withFileTypes: true })) {
    const full = join(e.parentPath, e.name);
    const rel = full.slice(repo.dir.length + 1);
    if (rel === '.git' || rel.startsWith('.git/') || !e.isFile()) continue;
    out.set(rel, readFileSync(full).toString('base64'));
  }
  return out;
}

async function applyDry(trust: string[] = repo.trust, extra: Partial<CliIo> = {}, plan = PLAN): Promise<CliResult> {
  const before = snapshot();
  const r = await runCtl(['apply-dry', plan, '--json', '--repo', repo.dir, ...trust], '/', extra);
  expect(snapshot()).toEqual(before);
  return r;
}

interface JsonError {
  code: string;
  message: string;
  file?: string;
  keyId?: string;
}

/** The refusal: exit 2, the JSON error alone on stdout, one `refused:` line on stderr naming the file (and key). */
function expectRefused(r: CliResult, code: TrustCode, file: string, keyId?: string): JsonError {
  expect(r.code, r.stderr).toBe(2);
  const out = JSON.parse(r.stdout) as { error: JsonError };
  expect(Object.keys(out)).toEqual(['error']);
  expect(out.error.code).toBe(code);
  expect(out.error.file).toBe(file);
  if (keyId !== undefined) expect(out.error.keyId).toBe(keyId);
  // No reconcile was computed or printed.
  expect(r.stdout).not.toMatch(/startOrder|stopOrder|noTouch|layers/);
  const lines = r.stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^keystonectl apply-dry: refused: .*\\[${code}\\]$`));
  expect(lines[0]).toContain(file);
  if (keyId !== undefined) expect(lines[0]).toContain(keyId);
  return out.error;
}

async function keygen(name: string): Promise<string> {
  const r = await runCtl(['keygen', '--out', join(repo.keyDir, name), '--no-password'], '/');
  expect(r.code, r.stderr).toBe(0);
  return keyIdOf(keyPath(name, 'pub'));
}

async function signWith(name: string, seconds: number, ...args: string[]): Promise<void> {
  const r = await runCtl(['sign', '--key', keyPath(name, 'key'), '--repo', repo.dir, ...args], '/', {
    now: () => seconds * 1000,
  });
  expect(r.code, r.stderr).toBe(0);
}

describe('the signed example repository is accepted as it is', () => {
  it('apply-dry --json exits 0 and names the signer', async () => {
    const r = await applyDry();
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.signature).toMatchObject({
      unsigned: false,
      signers: [testKeyId()],
      threshold: 1,
      signedAt: signedAt(),
    });
    expect(out.startOrder).toEqual(['influxdb', 'api', 'telemetry', 'web']);
  });
});

describe('attack suite: tampering with signed files', () => {
  it('a flipped byte in a recipe: KS_DIGEST_MISMATCH naming the recipe', async () => {
    flipByte('recipes/com.acme.api.toml', 5);
    const e = expectRefused(await applyDry(), 'KS_DIGEST_MISMATCH', 'recipes/com.acme.api.toml');
    expect(e.message).toContain('recipes/com.acme.api.toml');
  });

  it('a flipped byte in the plan: KS_DIGEST_MISMATCH naming the plan', async () => {
    flipByte(PLAN, 0);
    const e = expectRefused(await applyDry(), 'KS_DIGEST_MISMATCH', PLAN);
    expect(e.message).toContain(PLAN);
  });

  it('a flipped byte in SHA256SUMS: KS_SIGNATURE_INVALID, naming the key', async () => {
    // A character of the first digest. The signature is checked on the raw bytes before SHA256SUMS is parsed.
    flipByte(SUMS, 3);
    expectRefused(await applyDry(), 'KS_SIGNATURE_INVALID', SIG, testKeyId());
  });

  it('a flipped byte in the signature (in R): KS_SIGNATURE_INVALID', async () => {
    editSignatureBytes((raw) => {
      raw[10]! ^= 0x01; // bytes 0–1 algorithm, 2–9 key id, 10–41 R, 42–73 S
    });
    expectRefused(await applyDry(), 'KS_SIGNATURE_INVALID', SIG, testKeyId());
  });

  it('a flipped byte in the trusted comment (a later timestamp): KS_TRUSTED_COMMENT_INVALID', async () => {
    const lines = sigLines();
    expect(lines[2]).toMatch(/^trusted comment: timestamp:\d+\tfile:SHA256SUMS\thashed$/);
    const at = lines[2]!.indexOf('\tfile:') - 1; // the last digit of the timestamp
    lines[2] = lines[2]!.slice(0, at) + String.fromCharCode(lines[2]!.charCodeAt(at) ^ 0x01) + lines[2]!.slice(at + 1);
    writeSigLines(lines);
    expectRefused(await applyDry(), 'KS_TRUSTED_COMMENT_INVALID', SIG, testKeyId());
  });
});

describe('attack suite: files added, removed, mixed', () => {
  it('a plan added but not listed, used by apply-dry: KS_FILE_NOT_SIGNED', async () => {
    copyFileSync(path(PLAN), path('plans/added.toml'));
    const e = expectRefused(
      await applyDry(repo.trust, {}, 'plans/added.toml'),
      'KS_FILE_NOT_SIGNED',
      'plans/added.toml',
    );
    expect(e.message).toContain('plans/added.toml');
  });

  it('a listed file removed (even one this plan does not use): KS_SIGNED_FILE_MISSING', async () => {
    rmSync(path('recipes/com.acme.web-process.toml'));
    const e = expectRefused(await applyDry(), 'KS_SIGNED_FILE_MISSING', 'recipes/com.acme.web-process.toml');
    expect(e.message).toContain('recipes/com.acme.web-process.toml');
  });

  it('a recipe swapped for an older signed version of itself (mix-and-match): KS_DIGEST_MISMATCH', async () => {
    // The old version was signed (and committed); the bump is signed too; then the old bytes come back.
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await repo.sign();
    expect((await applyDry()).code).toBe(0);
    repo.git('checkout', 'HEAD', '--', 'recipes/com.acme.api.toml');
    expect(readFileSync(path('recipes/com.acme.api.toml'), 'utf8')).toContain('version = "1.4.0"');
    const e = expectRefused(await applyDry(), 'KS_DIGEST_MISMATCH', 'recipes/com.acme.api.toml');
    expect(e.message).toMatch(/another signed revision/);
  });
});

describe('attack suite: keys and thresholds', () => {
  it('a signature by an untrusted key: KS_UNTRUSTED_KEY naming both key ids', async () => {
    const mallory = await keygen('mallory');
    await signWith('mallory', 1_900_000_000);
    const e = expectRefused(await applyDry(), 'KS_UNTRUSTED_KEY', SIG, mallory);
    expect(e.message).toContain(mallory);
    expect(e.message).toContain(testKeyId());
  });

  it('a threshold not met (2 of 2 trusted keys required, one signature): KS_THRESHOLD_NOT_MET', async () => {
    await keygen('second');
    const trust = [
      '--trusted-key',
      keyPath('test', 'pub'),
      '--trusted-key',
      keyPath('second', 'pub'),
      '--threshold',
      '2',
    ];
    const e = expectRefused(await applyDry(trust), 'KS_THRESHOLD_NOT_MET', SIG);
    expect(e.message).toContain(testKeyId());
    expect(e.message).toMatch(/1 of the 2/);
  });

  it('a threshold met: two signers via sign --append, both listed in signature.signers', async () => {
    const second = await keygen('second');
    // A second after the first signature: a signature dated after the verifier's clock would be refused.
    await signWith('second', signedAt() + 1, '--append');
    expect(sigLines().filter((l) => l.startsWith('untrusted comment:'))).toHaveLength(2);
    const trust = [
      '--trusted-key',
      keyPath('test', 'pub'),
      '--trusted-key',
      keyPath('second', 'pub'),
      '--threshold',
      '2',
    ];
    const r = await applyDry(trust);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.signature.signers).toEqual([testKeyId(), second].sort());
    expect(out.signature.threshold).toBe(2);
    expect(out.startOrder).toEqual(['influxdb', 'api', 'telemetry', 'web']);
  });

  it('a malleated signature (S + L): KS_SIGNATURE_NONCANONICAL, though tweetnacl alone would accept it', async () => {
    const sums = readFileSync(path(SUMS));
    const pub = Buffer.from(readFileSync(keyPath('test', 'pub'), 'utf8').split('\n')[1]!, 'base64').subarray(10);
    let malleated = new Uint8Array();
    editSignatureBytes((raw) => {
      let s = 0n;
      for (let i = 73; i >= 42; i--) s = (s << 8n) | BigInt(raw[i]!);
      s += L;
      expect(s < 2n ** 256n).toBe(true);
      for (let i = 42; i < 74; i++) {
        raw[i] = Number(s & 0xffn);
        s >>= 8n;
      }
      malleated = Uint8Array.from(raw.subarray(10));
    });
    // The threat is real: plain Ed25519 verification (tweetnacl) accepts the malleated signature.
    expect(nacl.sign.detached.verify(blake2b(sums), malleated, pub)).toBe(true);
    expectRefused(await applyDry(), 'KS_SIGNATURE_NONCANONICAL', SIG, testKeyId());
  });

  it.each([
    ['all zeros (order 4)', '00'.repeat(32)],
    ['the identity, 0x01', `01${'00'.repeat(31)}`],
    ['an order-8 point', '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05'],
    ['y = p, a non-canonical encoding', `ed${'ff'.repeat(30)}7f`],
  ])('a weak trusted key (%s): KS_WEAK_KEY at key loading, naming the key file and id', async (_what, pointHex) => {
    const weak = join(repo.keyDir, 'weak.pub');
    const raw = Buffer.concat([
      Buffer.from('Ed'),
      Buffer.from('0102030405060708', 'hex'),
      Buffer.from(pointHex, 'hex'),
    ]);
    // minisign prints key ids without leading zeros (%PRIX64), and so does Keystone.
    writeFileSync(weak, `untrusted comment: minisign public key 807060504030201\n${raw.toString('base64')}\n`);
    const e = expectRefused(await applyDry(['--trusted-key', weak]), 'KS_WEAK_KEY', weak, '807060504030201');
    expect(e.message).toContain(weak);
    expect(e.message).toContain('807060504030201');
  });
});

describe('attack suite: signature files and missing signatures', () => {
  it('an oversized signature file (over 64 KiB): KS_SIGNATURE_TOO_LARGE; exactly 64 KiB still verifies', async () => {
    const size = statSync(path(SIG)).size;
    appendFileSync(path(SIG), '\n'.repeat(MAX_SIGNATURE_BYTES - size));
    expect(statSync(path(SIG)).size).toBe(64 * 1024);
    expect((await applyDry()).code).toBe(0);
    appendFileSync(path(SIG), '\n');
    const e = expectRefused(await applyDry(), 'KS_SIGNATURE_TOO_LARGE', SIG);
    expect(e.message).toContain(SIG);
  });

  it('no signature at all: KS_UNSIGNED', async () => {
    rmSync(path(SIG));
    const e = expectRefused(await applyDry(), 'KS_UNSIGNED', SIG);
    expect(e.message).toContain(SIG);
  });

  it('no trusted key and no --allow-unsigned: a usage error (exit 2), nothing read', async () => {
    const r = await applyDry([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no trusted key/);
    expect(r.stderr).toContain('--trusted-key');
    expect(r.stderr).toContain('usage:');
  });

  it.skipIf(minisign.skip)(
    minisign.title('a signature whose trusted comment has no timestamp (minisign -t): KS_SIGNATURE_NO_TIMESTAMP'),
    async () => {
      const sk = join(repo.keyDir, 'ms.key');
      const pk = join(repo.keyDir, 'ms.pub');
      execFileSync('minisign', ['-G', '-W', '-p', pk, '-s', sk], { stdio: 'pipe' });
      execFileSync('minisign', ['-S', '-s', sk, '-m', SUMS, '-t', 'no time here'], { cwd: repo.dir, stdio: 'pipe' });
      expect(sigLines()[2]).toBe('trusted comment: no time here');
      const id = keyIdOf(pk);
      const e = expectRefused(await applyDry(['--trusted-key', pk]), 'KS_SIGNATURE_NO_TIMESTAMP', SIG, id);
      expect(e.message).toContain(id);
    },
  );

  it('--max-age 1h with a signature made two hours earlier: KS_SIGNATURE_TOO_OLD; half an hour is fine', async () => {
    const now = 1_900_000_000;
    await signWith('test', now - 7200);
    expect(signedAt()).toBe(now - 7200);
    const trust = [...repo.trust, '--max-age', '1h'];
    expectRefused(await applyDry(trust, { now: () => now * 1000 }), 'KS_SIGNATURE_TOO_OLD', SIG);
    expect((await applyDry(trust, { now: () => (now - 5400) * 1000 })).code).toBe(0);
  });
});

describe('replay protection (verifyRevision with notBefore)', () => {
  const keyring = () => buildKeyring([{ source: 'test.pub', text: readFileSync(keyPath('test', 'pub'), 'utf8') }]);

  it('a revision signed earlier than the one applied last: KS_SIGNATURE_REPLAYED; signed at the same time: accepted', async () => {
    const at = signedAt();
    const reader = new DirectoryReader(repo.dir);
    const err = await verifyRevision(reader, { keyring: keyring(), now: at + 10, notBefore: at + 1 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TrustError);
    expect((err as TrustError).code).toBe('KS_SIGNATURE_REPLAYED');
    expect((err as TrustError).file).toBe(SIG);
    const ok = await verifyRevision(reader, { keyring: keyring(), now: at + 10, notBefore: at });
    expect(ok.signedAt).toBe(at);
    expect(ok.signers).toEqual([testKeyId()]);
  });

  it('k of n: an old 2-of-2 signed set restored as it was is refused as a replay', async () => {
    await keygen('second');
    const t1 = 1_900_000_000;
    await signWith('test', t1);
    await signWith('second', t1, '--append');
    repo.commit('revision 1, signed by both');
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    await signWith('test', t1 + 3600);
    await signWith('second', t1 + 3600, '--append');
    repo.commit('revision 2, signed by both, applied by the device');
    repo.git('checkout', 'HEAD~1', '--', '.');
    const keyring2 = buildKeyring(
      ['test', 'second'].map((k) => ({ source: `${k}.pub`, text: readFileSync(keyPath(k, 'pub'), 'utf8') })),
      2,
    );
    const err = await verifyRevision(new DirectoryReader(repo.dir), {
      keyring: keyring2,
      now: t1 + 3700,
      notBefore: t1 + 3600,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrustError);
    expect((err as TrustError).code).toBe('KS_SIGNATURE_REPLAYED');
  });

  // Regression (was a bug): with a threshold, the revision's signing time is the LATEST of its signers' timestamps
  // (verify-revision.ts: `signedAt = Math.max(...valid.values())`). A single compromised key can therefore
  // replay an old k-of-n-signed set: keep the other signers' old signature blocks and add a fresh one of its
  // own. The replay (and max-age) checks should use the time by which k trusted keys had signed (the k-th
  // latest timestamp), so that fewer than k keys can neither replay nor "refresh" a state.
  it('k of n: one key cannot make an old 2-of-2 signed set look new by re-signing it alone', async () => {
    await keygen('second');
    const t1 = 1_900_000_000;
    await signWith('test', t1);
    await signWith('second', t1, '--append');
    repo.commit('revision 1, signed by both');
    repo.edit('recipes/com.acme.api.toml', 'version = "1.4.0"', 'version = "1.5.0"');
    const t2 = t1 + 3600;
    await signWith('test', t2);
    await signWith('second', t2, '--append');
    repo.commit('revision 2, signed by both, applied by the device');
    // The holder of the "test" key alone restores revision 1 and adds a fresh signature of its own.
    repo.git('checkout', 'HEAD~1', '--', '.');
    await signWith('test', t2 + 3600, '--append');
    expect(sigLines().filter((l) => l.startsWith('trusted comment:'))).toEqual([
      `trusted comment: timestamp:${t1}\tfile:SHA256SUMS\thashed`,
      `trusted comment: timestamp:${t2 + 3600}\tfile:SHA256SUMS\thashed`,
    ]);
    const keyring2 = buildKeyring(
      ['test', 'second'].map((k) => ({ source: `${k}.pub`, text: readFileSync(keyPath(k, 'pub'), 'utf8') })),
      2,
    );
    const err = await verifyRevision(new DirectoryReader(repo.dir), {
      keyring: keyring2,
      now: t2 + 3700,
      notBefore: t2,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrustError);
    expect((err as TrustError).code).toBe('KS_SIGNATURE_REPLAYED');
  });
});
