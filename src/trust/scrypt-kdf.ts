// minisign encrypts secret keys with libsodium's scryptsalsa208sha256; its (opslimit, memlimit) pair maps to scrypt's (N, r, p) as below.
import { scrypt } from 'node:crypto';

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** libsodium's pickparams(), ported exactly so keys made by `minisign -G` decrypt here and ours there. */
export function pickScryptParams(opslimit: bigint, memlimit: bigint): ScryptParams {
  const ops = opslimit < 32768n ? 32768n : opslimit;
  const r = 8n;
  let nLog2 = 1n;
  let p: bigint;
  if (ops < memlimit / 32n) {
    p = 1n;
    const maxN = ops / (r * 4n);
    for (nLog2 = 1n; nLog2 < 63n; nLog2++) if (1n << nLog2 > maxN / 2n) break;
  } else {
    const maxN = memlimit / (r * 128n);
    for (nLog2 = 1n; nLog2 < 63n; nLog2++) if (1n << nLog2 > maxN / 2n) break;
    let maxrp = ops / 4n / (1n << nLog2);
    if (maxrp > 0x3fffffffn) maxrp = 0x3fffffffn;
    p = maxrp / r;
  }
  return { N: Number(1n << nLog2), r: Number(r), p: Number(p) };
}

/** minisign's defaults (OPSLIMIT_SENSITIVE, MEMLIMIT_SENSITIVE): N = 2^20, r = 8, p = 1, 1 GiB of memory. */
export const MINISIGN_OPSLIMIT = 33_554_432n;
export const MINISIGN_MEMLIMIT = 1_073_741_824n;

/** Refuse parameters that would make a hostile key file eat the machine: 4 GiB of scrypt memory at most. */
const MAX_SCRYPT_BYTES = 4 * 1024 ** 3;

export function deriveKeyStream(
  password: Uint8Array,
  salt: Uint8Array,
  opslimit: bigint,
  memlimit: bigint,
  length: number,
): Promise<Buffer> {
  const { N, r, p } = pickScryptParams(opslimit, memlimit);
  const need = 128 * N * r * Math.max(p, 1);
  if (p < 1 || need > MAX_SCRYPT_BYTES)
    return Promise.reject(new Error(`scrypt parameters N=${N} r=${r} p=${p} are out of bounds`));
  return new Promise((resolve, reject) =>
    scrypt(password, salt, length, { N, r, p, maxmem: need + 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}
