// Keys, identities and hand-made certificates for the identity tests: seeded, so every run signs the same bytes.
import { createHash } from 'node:crypto';
import { reportKeyLine } from '../../src/identity/certificate.js';
import { formatSignature, generateKey, keyIdHex, sign, type SecretKey } from '../../src/trust/minisign.js';

/** Deterministic bytes from a name: the injected randomness of generateKey. */
export function seeded(name: string): (n: number) => Uint8Array {
  let counter = 0;
  return (n) => {
    const out = Buffer.alloc(n);
    for (let off = 0; off < n; off += 32) createHash('sha256').update(`${name}:${counter++}`).digest().copy(out, off);
    return new Uint8Array(out);
  };
}

export const keyNamed = (name: string): SecretKey => generateKey(seeded(name));

/** The operator's enrolment key, another operator's, and two devices' report keys. */
export const ENROLL = keyNamed('enrolment');
export const OTHER = keyNamed('another operator');
export const GW1 = keyNamed('gw-1 report key');
export const GW1_NEW = keyNamed('gw-1 reinstalled');

/** The recipient of age's own README: a real one, whose checksum no typo keeps. */
export const AGE = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';

export const NOW = Date.parse('2026-12-04T10:00:00Z');

export const identityOf = (device: string, key: SecretKey = GW1) => ({
  device,
  reportKey: reportKeyLine(key),
  ageRecipient: AGE,
});

/**
 * A certificate laid out by hand around any body, signed with `key`: to reach the checks after the signature (a
 * body the schema refuses, a trusted comment that disagrees) with a signature that verifies.
 */
export function signBody(body: string, key: SecretKey, trustedComment = 'timestamp:1796378400 device=gw-1'): string {
  const sig = sign(
    new TextEncoder().encode(body),
    key,
    trustedComment,
    'prehashed',
    `signature from keystone enrolment key ${keyIdHex(key.keyId)}`,
  );
  return `${body}-----BEGIN KEYSTONE SIGNATURE-----\n${formatSignature(sig)}-----END KEYSTONE SIGNATURE-----\n`;
}

/** A valid body for gw-1, to edit one line of. */
export const BODY = `keystone-certificate = 1
device = "gw-1"
report_key = "${reportKeyLine(GW1)}"
age_recipient = "${AGE}"
issued = 2026-12-04T10:00:00Z
[labels]
site = "berlin"
`;
