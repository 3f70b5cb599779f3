// The node:crypto X25519 identity (src/secrets/x25519-identity.ts) unwraps exactly what age-encryption's own does: the
// file key of its own stanza wherever it stands among others, nothing for a file not made for it, and a refusal for
// a damaged stanza; the age binary's files are read too (test/secrets/age-interop.test.ts).
import fc from 'fast-check';
import { Decrypter, Encrypter } from 'age-encryption';
import { describe, expect, it } from 'vitest';
import { decryptWith, newAgeIdentity } from '../../src/secrets/age-codec.js';
import { NodeX25519Identity } from '../../src/secrets/x25519-identity.js';

const ids = await Promise.all(Array.from({ length: 6 }, () => newAgeIdentity()));

async function encrypt(recipients: string[], text: string): Promise<Uint8Array> {
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  return e.encrypt(text);
}

describe('NodeX25519Identity', () => {
  it('opens its own stanza at any position among others, as age-encryption does; nothing otherwise', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray([0, 1, 2, 3, 4], { minLength: 1 }),
        fc.nat({ max: 5 }),
        fc.string(),
        async (who, me, text) => {
          const file = await encrypt(
            who.map((i) => ids[i]!.recipient),
            text,
          );
          const ours = await decryptWith([ids[me]!.identity], file);
          const d = new Decrypter();
          d.addIdentity(ids[me]!.identity);
          const theirs = await d.decrypt(file, 'text').catch(() => undefined);
          expect(ours === undefined ? undefined : new TextDecoder().decode(ours)).toBe(theirs);
          expect(ours !== undefined).toBe(who.includes(me));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('refuses a stanza that is not well formed, and is not fooled by a body of another key', async () => {
    const id = new NodeX25519Identity(ids[0]!.identity);
    expect(() => id.unwrapFileKey([{ args: ['X25519'], body: new Uint8Array(32) }])).toThrow(/invalid X25519 stanza/);
    expect(() => id.unwrapFileKey([{ args: ['X25519', 'A'.repeat(43)], body: new Uint8Array(31) }])).toThrow(
      /invalid X25519 stanza/,
    );
    // A low-order point (all zero): age refuses it.
    expect(() => id.unwrapFileKey([{ args: ['X25519', 'A'.repeat(43)], body: new Uint8Array(32) }])).toThrow(
      /invalid X25519 stanza/,
    );
    // Another type is not ours to judge; a valid share with a body that does not authenticate is not ours either.
    expect(id.unwrapFileKey([{ args: ['scrypt', 'x', '10'], body: new Uint8Array(32) }])).toBeNull();
    const share = Buffer.from(new NodeX25519Identity(ids[1]!.identity)['recipient'])
      .toString('base64')
      .replace(/=+$/, '');
    expect(id.unwrapFileKey([{ args: ['X25519', share], body: new Uint8Array(32).fill(7) }])).toBeNull();
  });

  it('is not made from anything but an X25519 identity, and never quotes what it was given', () => {
    for (const bad of ['', 'AGE-SECRET-KEY-1', 'AGE-SECRET-KEY-PQ-1QQQ', ids[0]!.recipient])
      expect(() => new NodeX25519Identity(bad)).toThrow(/^not an age X25519 identity$/);
  });
});
