// The checks libsodium makes and tweetnacl does not, confirmed against an independent implementation (@noble/curves).
import { ED25519_TORSION_SUBGROUP, ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import {
  hasSmallOrder,
  isCanonicalPoint,
  isCanonicalScalar,
  isStrongPublicKey,
} from '../../src/trust/ed25519-checks.js';

const Point = ed25519.Point;
/** The field prime p = 2^255 − 19 and the group order L, from noble, not from the code under test. */
const P = Point.Fp.ORDER;
const L = Point.Fn.ORDER;

const le = (n: bigint, length = 32): Uint8Array => {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    out[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  expect(n).toBe(0n);
  return out;
};
const hex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));
const withSign = (b: Uint8Array, sign: 0 | 1) => {
  const c = Uint8Array.from(b);
  c[31] = (c[31]! & 0x7f) | (sign << 7);
  return c;
};
/** Decodes like libsodium's ge25519_frombytes would (non-canonical y accepted), or undefined for a non-point. */
const decode = (b: Uint8Array) => {
  try {
    return Point.fromBytes(b, true);
  } catch {
    return undefined;
  }
};

/** libsodium's blocklist (ge25519_has_small_order), the same seven encodings src/trust/ed25519-checks.ts lists. */
const BLOCKLIST = [
  '0000000000000000000000000000000000000000000000000000000000000000', // y = 0: order 4
  '0100000000000000000000000000000000000000000000000000000000000000', // y = 1: the identity
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p − 1: order 2
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p (≡ 0), non-canonical: order 4
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p + 1 (≡ 1), non-canonical: the identity
];

describe('hasSmallOrder', () => {
  it('the constants agree with noble: p = 2^255 − 19 and L = 2^252 + 27742317777372353535851937790883648493', () => {
    expect(P).toBe(2n ** 255n - 19n);
    expect(L).toBe(2n ** 252n + 27742317777372353535851937790883648493n);
  });

  it.each(BLOCKLIST)('%s, with either sign bit, is a point of small order (8·P = O) and is flagged', (h) => {
    for (const sign of [0, 1] as const) {
      const bytes = withSign(hex(h), sign);
      const point = decode(bytes);
      // y = 1 with the sign bit set is "−0": libsodium rejects it as a point; if noble decodes it, it must still be small.
      if (point) {
        expect(point.multiplyUnsafe(8n).is0()).toBe(true);
        expect(point.isSmallOrder()).toBe(true);
      }
      expect(hasSmallOrder(bytes)).toBe(true);
      expect(isStrongPublicKey(bytes)).toBe(false);
    }
  });

  it("every point of noble's 8-torsion subgroup is flagged (the blocklist is complete)", () => {
    expect(ED25519_TORSION_SUBGROUP).toHaveLength(8);
    for (const h of ED25519_TORSION_SUBGROUP) {
      const bytes = hex(h);
      expect(Point.fromBytes(bytes).multiplyUnsafe(8n).is0()).toBe(true);
      expect(hasSmallOrder(bytes)).toBe(true);
    }
  });

  it('every non-canonical encoding (y ≥ p) of a small-order point is flagged too', () => {
    let found = 0;
    for (let y = P; y < 2n ** 255n; y++) {
      for (const sign of [0, 1] as const) {
        const bytes = withSign(le(y), sign);
        const point = decode(bytes);
        if (point?.isSmallOrder()) {
          found++;
          expect(hasSmallOrder(bytes)).toBe(true);
        }
      }
    }
    expect(found).toBeGreaterThanOrEqual(2); // y = p (≡ 0) with both signs; y = p + 1 (≡ 1, x = 0) with a clear sign bit
  });

  it('random real public keys (noble and tweetnacl) are not flagged, and are strong', () => {
    for (let i = 0; i < 20; i++) {
      for (const pk of [ed25519.keygen().publicKey, nacl.sign.keyPair().publicKey]) {
        expect(Point.fromBytes(pk).isSmallOrder()).toBe(false);
        expect(hasSmallOrder(pk)).toBe(false);
        expect(isCanonicalPoint(pk)).toBe(true);
        expect(isStrongPublicKey(pk)).toBe(true);
      }
    }
  });

  it('agrees with noble on arbitrary 32-byte strings that decode to a point (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const point = decode(bytes);
        if (point) expect(hasSmallOrder(bytes)).toBe(point.isSmallOrder());
      }),
      { numRuns: 300 },
    );
  });

  it('a small-order point plus a real key is a mixed-order point, not small: not flagged (as libsodium)', () => {
    const A = Point.fromBytes(ed25519.keygen().publicKey);
    const T = Point.fromHex(ED25519_TORSION_SUBGROUP[3]!);
    expect(hasSmallOrder(A.add(T).toBytes())).toBe(false);
  });
});

describe('isCanonicalScalar (S < L)', () => {
  it.each([
    ['0', 0n],
    ['1', 1n],
    ['2^252', 2n ** 252n],
    ['L − 1', -1n],
  ])('accepts S = %s', (_name, s) => {
    expect(isCanonicalScalar(le(s < 0n ? L + s : s))).toBe(true);
  });

  it.each([
    ['L', L],
    ['L + 1', L + 1n],
    ['2L', 2n * L],
    ['2^253', 2n ** 253n],
    ['2^255', 2n ** 255n],
    ['2^256 − 1', 2n ** 256n - 1n],
  ])('refuses S = %s', (_name, s) => {
    expect(isCanonicalScalar(le(s))).toBe(false);
  });

  it('agrees with S < L on random and near-L scalars (property)', () => {
    const near = fc.bigInt({ min: -300n, max: 300n }).map((d) => L + d);
    const any = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n });
    fc.assert(
      fc.property(fc.oneof(near, any), (s) => {
        expect(isCanonicalScalar(le(s))).toBe(s < L);
      }),
      { numRuns: 500 },
    );
  });

  it('real signatures (tweetnacl and noble) have canonical S', () => {
    const kp = nacl.sign.keyPair();
    const sig = nacl.sign.detached(new Uint8Array([1, 2, 3]), kp.secretKey);
    expect(isCanonicalScalar(sig.subarray(32))).toBe(true);
    const { secretKey } = ed25519.keygen();
    expect(isCanonicalScalar(ed25519.sign(new Uint8Array([4]), secretKey).subarray(32))).toBe(true);
  });
});

describe('isCanonicalPoint (y < p)', () => {
  it('accepts y = p − 1 and refuses every y from p to 2^255 − 1, whatever the sign bit', () => {
    for (const sign of [0, 1] as const) {
      expect(isCanonicalPoint(withSign(le(P - 1n), sign))).toBe(true);
      for (let y = P; y < 2n ** 255n; y++) {
        const bytes = withSign(le(y), sign);
        expect(isCanonicalPoint(bytes)).toBe(false);
        expect(isStrongPublicKey(bytes)).toBe(false);
        // noble, in strict (RFC 8032) mode, refuses these encodings as well.
        expect(() => Point.fromBytes(bytes, false)).toThrow();
      }
    }
  });

  it('agrees with y < p on random encodings and on encodings near p (property)', () => {
    const near = fc.bigInt({ min: P - 300n, max: 2n ** 255n - 1n });
    const any = fc.bigInt({ min: 0n, max: 2n ** 255n - 1n });
    fc.assert(
      fc.property(fc.oneof(near, any), fc.constantFrom<0 | 1>(0, 1), (y, sign) => {
        expect(isCanonicalPoint(withSign(le(y), sign))).toBe(y < P);
      }),
      { numRuns: 500 },
    );
  });

  it('isStrongPublicKey refuses anything but 32 bytes', () => {
    const pk = nacl.sign.keyPair().publicKey;
    expect(isStrongPublicKey(pk.subarray(0, 31))).toBe(false);
    expect(isStrongPublicKey(Uint8Array.from([...pk, 0]))).toBe(false);
  });
});
