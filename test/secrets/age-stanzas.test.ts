// An age file with too many recipient stanzas (MAX_STANZAS) is refused before any identity tries one: every identity
// tries every X25519 stanza, so a file of thousands costs seconds to open, and a pull request's checkout may hold one
// (`secret ls`, `rekey`, apply-dry). No file Keystone makes comes near the limit: a target key file, armored as
// keystonectl writes it, holds fewer stanzas in the 1 MiB a device reads.
import { randomBytes } from 'node:crypto';
import { armor } from 'age-encryption';
import { describe, expect, it, vi } from 'vitest';
import { MAX_STANZAS, recipientStanzas, stanzaCount } from '../../src/secrets/age-header.js';
import { decryptWith, encryptTo, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { MAX_SECRET_FILE_BYTES } from '../../src/core/secret-paths.js';
import { NodeX25519Identity } from '../../src/secrets/x25519-identity.js';

const b64 = (n: number) => randomBytes(n).toString('base64').replace(/=+$/, '');
/** An X25519 stanza of the size a real one has (a 32-byte share, a 32-byte wrapped file key), for no one. */
const x25519Stanza = () => `-> X25519 ${b64(32)}\n${b64(32)}\n`;

/** `file` (binary) with `stanzas` inserted after its own, as an attacker would pad a header. */
function padded(file: Uint8Array, stanzas: string): Uint8Array {
  const text = Buffer.from(file).toString('latin1');
  const at = text.indexOf('\n---') + 1;
  return Buffer.from(text.slice(0, at) + stanzas + text.slice(at), 'latin1');
}

const me = await newAgeIdentity();
const file = await encryptTo([me.recipient], new TextEncoder().encode('value'), { binary: true });

describe('age files with too many recipients', () => {
  it('more than MAX_STANZAS X25519 stanzas, binary or armored: refused ("too many recipients") before decrypting', async () => {
    const big = padded(file, Array.from({ length: MAX_STANZAS }, x25519Stanza).join(''));
    expect(stanzaCount(big)).toBe(MAX_STANZAS + 1);
    expect(big.length).toBeLessThan(MAX_SECRET_FILE_BYTES);
    const unwrap = vi.spyOn(NodeX25519Identity.prototype, 'unwrapFileKey');
    await expect(decryptWith([me.identity], big)).rejects.toThrow(
      `too many recipients: ${MAX_STANZAS + 1} stanzas in the header, more than the ${MAX_STANZAS} a file is opened with`,
    );
    const armored = new TextEncoder().encode(armor.encode(big));
    await expect(decryptWith([me.identity], armored)).rejects.toThrow(/^too many recipients/);
    // Refused from the header lines alone: no identity was tried on a stanza (8,192 exchanges take ~1.5 s).
    expect(unwrap).not.toHaveBeenCalled();
    unwrap.mockRestore();
  });

  it('tiny stanzas of an unknown type (or grease) count too: a megabyte of them costs as much to parse', async () => {
    const tiny = padded(file, '-> x\n\n'.repeat(150_000));
    expect(recipientStanzas(tiny)).toHaveLength(150_001);
    await expect(decryptWith([me.identity], tiny)).rejects.toThrow(/^too many recipients: 150001 stanzas/);
    const grease = padded(file, `-> x-grease ${b64(8)}\n\n`.repeat(MAX_STANZAS));
    expect(recipientStanzas(grease)).toEqual(['X25519']);
    expect(stanzaCount(grease)).toBe(MAX_STANZAS + 1);
    await expect(decryptWith([me.identity], grease)).rejects.toThrow(/^too many recipients/);
  });

  it('MAX_STANZAS itself is opened as usual (here: its header MAC is not the padded one)', async () => {
    const atLimit = padded(file, Array.from({ length: MAX_STANZAS - 1 }, x25519Stanza).join(''));
    expect(stanzaCount(atLimit)).toBe(MAX_STANZAS);
    await expect(decryptWith([me.identity], atLimit)).rejects.toThrow(/^damaged age file/);
    expect(new TextDecoder().decode(await decryptWith([me.identity], file))).toBe('value');
  });

  it('a target key file at the 1 MiB a device reads holds fewer than MAX_STANZAS stanzas, armored as keystonectl writes it', async () => {
    // An identity file (what a target key file holds) encrypted to one device, then as many stanzas as fit.
    const key = await encryptTo(
      [me.recipient],
      new TextEncoder().encode(`# created: 2026-01-01T00:00:00Z\n# public key: ${me.recipient}\n${me.identity}\n`),
      { binary: true },
    );
    const perStanza = x25519Stanza().length;
    const armoredSize = (n: number) =>
      armor.encode(padded(key, Array.from({ length: n - 1 }, x25519Stanza).join(''))).length;
    expect(perStanza).toBe(98);
    // MAX_STANZAS stanzas, armored, are more than a device reads: such a key file could not be read anyway.
    expect(armoredSize(MAX_STANZAS)).toBeGreaterThan(MAX_SECRET_FILE_BYTES);
    // The most that fit (~7,900, README's "target size limit"): under the limit, so every key a device can read opens.
    let [lo, hi] = [1, MAX_STANZAS];
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (armoredSize(mid) <= MAX_SECRET_FILE_BYTES) lo = mid;
      else hi = mid;
    }
    expect(lo).toBeGreaterThan(7_800);
    expect(lo).toBeLessThan(MAX_STANZAS);
  });
});
