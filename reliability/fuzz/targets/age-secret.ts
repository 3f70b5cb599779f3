// A device opening the secrets a revision gives it (src/secrets/open-secrets.ts SecretOpener, age-codec.ts): the target's
// key file and a secret are the repository's bytes, opened with the device's own age identity. The contract: the value
// when the bytes are a real age file to the right recipient, else a SecretError with its code — never another
// exception, never a value from a file that was not made for this device. Seeds are files encrypted here by
// age-encryption (armored and binary); the age binary's own files are tested in test/secrets/age-interop.test.ts.
import fc from 'fast-check';
import { formatAgeIdentityFile } from '../../../src/identity/age-identity-file.js';
import { encryptTo, newAgeIdentity, parseRecipients } from '../../../src/secrets/age-codec.js';
import { SecretOpener } from '../../../src/secrets/open-secrets.js';
import { digestKeyOf } from '../../../src/secrets/secret-digest.js';
import { SecretError } from '../../../src/secrets/secret-error.js';
import { MemoryReader } from '../../../src/source/memory-reader.js';
import { holds, refusedWith, utf8, type FuzzTarget } from '../fuzz-target.js';

const enc = new TextEncoder();
const VALUE = enc.encode('fuzz-secret-value-0123456789');
const device = await newAgeIdentity();
const target = await newAgeIdentity();
const keyFile = await encryptTo([device.recipient], enc.encode(formatAgeIdentityFile(target, Date.UTC(2026, 0, 1))));
const seeds = [
  keyFile,
  await encryptTo([device.recipient], enc.encode(formatAgeIdentityFile(target, Date.UTC(2026, 0, 1))), {
    binary: true,
  }),
  await encryptTo([target.recipient], VALUE),
  await encryptTo([target.recipient], VALUE, { binary: true }),
  enc.encode(`# readers: a b\n${target.recipient}\n`),
];

/** A seed with a few bytes changed, cut, or doubled: near misses of a real age file. */
const mutated = fc
  .tuple(
    fc.constantFrom(...seeds),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
    fc.option(fc.nat(), { nil: undefined }),
  )
  .map(([seed, flips, cut]) => {
    const out = Uint8Array.from(seed);
    for (const [at, byte] of flips) out[at % out.length] = byte;
    return cut === undefined ? out : out.subarray(0, cut % (out.length + 1));
  });

export const ageSecret: FuzzTarget = {
  name: 'age-secret',
  parses:
    'SecretOpener.open, decryptWith, parseRecipients (src/secrets/): secrets/keys/T.age, secrets/NAME.age, secrets/recipients/T.txt',
  maxBytes: 4 * 1024,
  testRuns: 400,
  defaultRuns: 10_000,
  dictionary: [
    'age-encryption.org/v1\n',
    '-> X25519 ',
    '---',
    '-----BEGIN AGE ENCRYPTED FILE-----\n',
    '-----END AGE ENCRYPTED FILE-----\n',
    'AGE-SECRET-KEY-1',
    target.recipient,
  ],
  structured: mutated,
  async check(input) {
    // As a recipients file: every line a recipient, or an error naming the line.
    try {
      for (const r of parseRecipients(utf8(input), 'secrets/recipients/t.txt'))
        holds(/^age1[a-z0-9]{58}$/.test(r), `a recipient that is not one: ${r}`);
    } catch (e) {
      holds(
        e instanceof Error && /^secrets\/recipients\/t\.txt:\d+: /.test(e.message),
        `parseRecipients threw ${(e as Error).message}`,
      );
    }
    // As the secret, then as the key file: opened only when the bytes are an age file made for it.
    const opener = new SecretOpener({ ageIdentity: device.identity, digestKey: digestKeyOf(device.identity) });
    let outcome: 'accepted' | 'refused' = 'refused';
    for (const files of [
      { 'secrets/keys/t.age': keyFile, 'secrets/s.age': input },
      { 'secrets/keys/t.age': input, 'secrets/s.age': seeds[2]! },
    ]) {
      try {
        const opened = await opener.open(new MemoryReader(new Map(Object.entries(files)), 'fuzz'), ['s'], 't');
        const value = [...opened.values.values()][0]!;
        holds(Buffer.from(value).equals(Buffer.from(VALUE)), 'opened a value that was never encrypted');
        outcome = 'accepted';
      } catch (e) {
        refusedWith(
          e,
          (x) =>
            x instanceof SecretError && /^KS_SECRET_[A-Z_]+$/.test(x.code) && !x.message.includes('fuzz-secret-value'),
        );
      }
    }
    return outcome;
  },
};
