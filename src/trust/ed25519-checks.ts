// Checks tweetnacl does not make but libsodium (and so minisign) does: canonical S, and no small-order or non-canonical points.

/** L, the order of the Ed25519 base point, little-endian. */
const L = Uint8Array.from([
  0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
]);

/** True when the scalar S (second half of a signature) is < L; S ≥ L is a malleated signature. */
export function isCanonicalScalar(s: Uint8Array): boolean {
  for (let i = 31; i >= 0; i--) {
    if (s[i]! < L[i]!) return true;
    if (s[i]! > L[i]!) return false;
  }
  return false; // S == L
}

const ff = (first: number) => {
  const a = new Uint8Array(32).fill(0xff);
  a[0] = first;
  a[31] = 0x7f;
  return a;
};

/** The encodings of the points of order 1, 2, 4 and 8 (libsodium's blocklist), compared ignoring the sign bit. */
const SMALL_ORDER: Uint8Array[] = [
  new Uint8Array(32),
  Uint8Array.from([1, ...new Array(31).fill(0)]),
  Uint8Array.from([
    0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac,
    0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05,
  ]),
  Uint8Array.from([
    0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53,
    0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
  ]),
  ff(0xec),
  ff(0xed),
  ff(0xee),
];

/** True for a point of small order: a public key (or R) that would let one signature verify for many messages. */
export function hasSmallOrder(p: Uint8Array): boolean {
  return SMALL_ORDER.some((b) => {
    let diff = 0;
    for (let i = 0; i < 31; i++) diff |= p[i]! ^ b[i]!;
    diff |= (p[31]! & 0x7f) ^ b[31]!;
    return diff === 0;
  });
}

/** True when the point's y coordinate is reduced (< 2^255 − 19); a non-canonical encoding aliases another key. */
export function isCanonicalPoint(p: Uint8Array): boolean {
  if ((p[31]! & 0x7f) !== 0x7f) return true;
  for (let i = 30; i > 0; i--) if (p[i] !== 0xff) return true;
  return p[0]! < 0xed;
}

/** A public key Keystone accepts: canonical and not of small order. */
export function isStrongPublicKey(pk: Uint8Array): boolean {
  return pk.length === 32 && isCanonicalPoint(pk) && !hasSmallOrder(pk);
}
