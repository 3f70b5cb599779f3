// The keys and the signed revision the trust targets verify against: made with the real `minisign` binary (keys a and
// b, `minisign -G -W`), SHA256SUMS over the two small files beside it. The signatures themselves are the corpus.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MemoryReader } from '../../src/source/memory-reader.js';
import { buildKeyring, type Keyring } from '../../src/trust/keyring.js';

const dir = fileURLToPath(new URL('./fixtures/trust/', import.meta.url));
const read = (p: string) => readFileSync(dir + p);

export const SUMS = new Uint8Array(read('SHA256SUMS'));
export const SIGNED_FILES: ReadonlyMap<string, Uint8Array> = new Map(
  ['plans/p.toml', 'recipes/a.toml'].map((p) => [p, new Uint8Array(read(p))]),
);
export const KEY_TEXTS = ['a.pub', 'b.pub'].map((p) => ({ source: p, text: read(p).toString('utf8') }));

/** Both keys trusted; `threshold` of them must sign. */
export const keyring = (threshold: number): Keyring => buildKeyring(KEY_TEXTS, threshold);

/** A revision as a source serves it: the signed files, SHA256SUMS and the given signature file. */
export function signedRevision(minisig: Uint8Array, sums: Uint8Array = SUMS): MemoryReader {
  return new MemoryReader(new Map([...SIGNED_FILES, ['SHA256SUMS', sums], ['SHA256SUMS.minisig', minisig]]), 'fuzz');
}

/** 2025-12-02, a day after the corpus signatures' timestamps: they are valid and not from the future. */
export const NOW = 1_764_720_000;
