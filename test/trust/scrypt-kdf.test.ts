// libsodium's (opslimit, memlimit) → scrypt (N, r, p) mapping, which minisign's password-protected keys depend on.
import { scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSecretKey } from '../../src/trust/minisign.js';
import { deriveKeyStream, MINISIGN_MEMLIMIT, MINISIGN_OPSLIMIT, pickScryptParams } from '../../src/trust/scrypt-kdf.js';
import { TrustError } from '../../src/trust/trust-error.js';

/*
 * Expected values, worked out by hand from libsodium's pickparams()
 * (crypto_pwhash/scryptsalsa208sha256/pwhash_scryptsalsa208sha256.c), not from the code under test:
 *
 *   if opslimit < 32768: opslimit = 32768
 *   r = 8
 *   if opslimit < memlimit / 32:                 (time-bound)
 *     p = 1; maxN = opslimit / (r * 4)
 *     N_log2 = the first n in 1..62 with 2^n > maxN / 2
 *   else:                                         (memory-bound)
 *     maxN = memlimit / (r * 128)
 *     N_log2 = the first n in 1..62 with 2^n > maxN / 2
 *     maxrp = min((opslimit / 4) / 2^N_log2, 0x3fffffff); p = maxrp / r
 * (all divisions are integer divisions)
 *
 * a) minisign's defaults, opslimit 33554432 (2^25), memlimit 1073741824 (2^30):
 *    memlimit / 32 = 2^25, and 2^25 < 2^25 is false → memory-bound.
 *    maxN = 2^30 / 1024 = 2^20; maxN / 2 = 2^19; the first 2^n > 2^19 is 2^20 → N = 2^20.
 *    maxrp = (2^25 / 4) / 2^20 = 8; p = 8 / 8 = 1.                          → N=1048576, r=8, p=1
 * b) libsodium's "interactive" limits, 524288 (2^19), 16777216 (2^24):
 *    memlimit / 32 = 2^19 = opslimit → memory-bound; maxN = 2^24 / 1024 = 2^14 → N = 2^14;
 *    maxrp = 2^17 / 2^14 = 8; p = 1.                                          → N=16384, r=8, p=1
 * c) opslimit 1000 (raised to 32768), memlimit 16 MiB:
 *    memlimit / 32 = 524288 > 32768 → time-bound; maxN = 32768 / 32 = 1024; maxN / 2 = 512;
 *    the first 2^n > 512 is 2^10.                                             → N=1024, r=8, p=1
 * d) opslimit 100000, memlimit 2^30: 100000 < 2^25 → time-bound; maxN = 100000 / 32 = 3125;
 *    3125 / 2 = 1562; 2^10 = 1024 ≤ 1562 < 2^11 = 2048.                       → N=2048, r=8, p=1
 * e) opslimit 33554431 (2^25 − 1), memlimit 2^30: just time-bound; maxN = 33554431 / 32 = 1048575;
 *    1048575 / 2 = 524287; 2^19 = 524288 > 524287 → N = 2^19 (half of (a)).  → N=524288, r=8, p=1
 * f) opslimit 2^30, memlimit 2^24: 2^19 < 2^30 → memory-bound; maxN = 2^14 → N = 2^14;
 *    maxrp = 2^28 / 2^14 = 2^14 = 16384; p = 16384 / 8 = 2048.               → N=16384, r=8, p=2048
 * g) opslimit 2^25, memlimit 3 MiB (3145728): 98304 < 2^25 → memory-bound; maxN = 3145728 / 1024 = 3072;
 *    3072 / 2 = 1536 → N = 2048; maxrp = 2^23 / 2^11 = 4096; p = 512.       → N=2048, r=8, p=512
 * h) opslimit 2^62, memlimit 2^20: memory-bound; maxN = 1024 → N = 1024;
 *    maxrp = 2^60 / 2^10 = 2^50, capped to 0x3fffffff = 1073741823; p = 1073741823 / 8 = 134217727.
 *                                                                              → N=1024, r=8, p=134217727
 * i) opslimit 32768, memlimit 0: 32768 < 0 is false → memory-bound; maxN = 0; 2^1 > 0 → N = 2;
 *    maxrp = 8192 / 2 = 4096; p = 512.                                        → N=2, r=8, p=512
 */
const CASES: Array<[string, bigint, bigint, { N: number; r: number; p: number }]> = [
  ['a) minisign defaults', 33_554_432n, 1_073_741_824n, { N: 1_048_576, r: 8, p: 1 }],
  ['b) libsodium interactive', 524_288n, 16_777_216n, { N: 16_384, r: 8, p: 1 }],
  ['c) opslimit below the floor', 1_000n, 16_777_216n, { N: 1_024, r: 8, p: 1 }],
  ['d) time-bound, maxN not a power of two', 100_000n, 1_073_741_824n, { N: 2_048, r: 8, p: 1 }],
  ['e) one below the branch switch', 33_554_431n, 1_073_741_824n, { N: 524_288, r: 8, p: 1 }],
  ['f) memory-bound with p > 1', 1_073_741_824n, 16_777_216n, { N: 16_384, r: 8, p: 2_048 }],
  ['g) memory-bound, maxN not a power of two', 33_554_432n, 3_145_728n, { N: 2_048, r: 8, p: 512 }],
  ['h) maxrp capped at 0x3fffffff', 2n ** 62n, 1_048_576n, { N: 1_024, r: 8, p: 134_217_727 }],
  ['i) no memory at all', 32_768n, 0n, { N: 2, r: 8, p: 512 }],
];

describe('pickScryptParams (libsodium pickparams)', () => {
  it.each(CASES)('%s: opslimit %s, memlimit %s', (_name, ops, mem, expected) => {
    expect(pickScryptParams(ops, mem)).toEqual(expected);
  });

  it("minisign's constants are OPSLIMIT_SENSITIVE and MEMLIMIT_SENSITIVE", () => {
    expect(MINISIGN_OPSLIMIT).toBe(33_554_432n);
    expect(MINISIGN_MEMLIMIT).toBe(1_073_741_824n);
    expect(pickScryptParams(MINISIGN_OPSLIMIT, MINISIGN_MEMLIMIT)).toEqual({ N: 2 ** 20, r: 8, p: 1 });
  });
});

describe('deriveKeyStream', () => {
  it('is scrypt with the picked parameters (cheap parameters, checked against node:crypto directly)', async () => {
    const password = new TextEncoder().encode('pw');
    const salt = new Uint8Array(32).map((_, i) => i);
    const stream = await deriveKeyStream(password, salt, 1_000n, 16_777_216n, 104); // case c): N=1024, r=8, p=1
    expect(stream).toHaveLength(104);
    expect(Buffer.from(stream)).toEqual(scryptSync(password, salt, 104, { N: 1024, r: 8, p: 1 }));
    const other = await deriveKeyStream(password, salt, 100_000n, 1_073_741_824n, 104); // case d): N=2048
    expect(Buffer.from(other)).toEqual(scryptSync(password, salt, 104, { N: 2048, r: 8, p: 1 }));
  });

  it('refuses parameters that would need more than 4 GiB, without trying', async () => {
    const t0 = Date.now();
    // opslimit = memlimit = 2^40 → memory-bound, N = 2^30, 128·N·r = 1 TiB.
    await expect(deriveKeyStream(new Uint8Array(1), new Uint8Array(32), 2n ** 40n, 2n ** 40n, 104)).rejects.toThrow(
      /out of bounds/,
    );
    // case h): N=1024 but p = 134217727 → 128·1024·8·p ≈ 128 TiB.
    await expect(deriveKeyStream(new Uint8Array(1), new Uint8Array(32), 2n ** 62n, 1_048_576n, 104)).rejects.toThrow(
      /out of bounds/,
    );
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  // Regression (was a bug): a secret key file whose scrypt parameters are out of bounds is refused with a plain Error, not a
  // TrustError, so `keystonectl sign` reports it as an "unexpected failure" with a stack trace and exit code 1
  // instead of a bad-input refusal (KS_KEY_MALFORMED, exit 2). deriveKeyStream's rejection is not wrapped.
  it('a password-protected key with absurd scrypt parameters is refused as a malformed key (KS_KEY_MALFORMED)', async () => {
    const raw = Buffer.alloc(158);
    raw.write('EdScB2', 0, 'latin1');
    raw.writeBigUInt64LE(2n ** 40n, 38); // opslimit
    raw.writeBigUInt64LE(2n ** 40n, 46); // memlimit
    const text = `untrusted comment: minisign encrypted secret key\n${raw.toString('base64')}\n`;
    const err = await parseSecretKey(text, new TextEncoder().encode('pw')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrustError);
    expect((err as TrustError).code).toBe('KS_KEY_MALFORMED');
  });
});
