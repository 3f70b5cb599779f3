// Device certificates (src/identity/certificate.ts parseCertificate, verifyCertificate): devices/NAME.cert from the
// repository, or published by a device beside its reports — anyone who can push can put bytes there. Seeds are
// certificates signed with the fuzz enrolment key (identity-fixture.ts); the generator signs bodies of every shape
// with it, so inputs reach the schema, the names, the times and the revocations behind a signature that verifies.
import fc from 'fast-check';
import { deviceNameProblem } from '../../../src/core/labels.js';
import { ageRecipientProblem } from '../../../src/identity/age-recipient-syntax.js';
import {
  CERTIFICATE_FUTURE_SKEW_MS,
  parseCertificate,
  reportKeyLine,
  verifyCertificate,
  type DeviceCertificate,
} from '../../../src/identity/certificate.js';
import { signCertificate } from '../../../src/identity/sign-certificate.js';
import { IdentityError } from '../../../src/identity/identity-error.js';
import { parseRevocations, revokedReason } from '../../../src/identity/revocations.js';
import { keyIdHex } from '../../../src/trust/minisign.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';
import { CERT_NOW, FUZZ_DEVICE, FUZZ_ENROLMENT, signedCertificate } from '../identity-fixture.js';

const FILE = 'devices/gw-1.cert';
const AGE = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';
const CERT_CODES = new Set([
  'KS_CERT_MALFORMED',
  'KS_CERT_UNKNOWN_KEY',
  'KS_CERT_BAD_SIGNATURE',
  'KS_CERT_WRONG_DEVICE',
  'KS_CERT_EXPIRED',
  'KS_CERT_REVOKED',
]);
const isCertError = (e: unknown) =>
  e instanceof IdentityError && CERT_CODES.has(e.code) && e.message.includes(FILE) && e.file === FILE;
/** gw-2 is revoked, so some signed inputs end there. */
const REVOCATIONS = parseRevocations('[[revoked]]\ndevice = "gw-2"\nreason = "fuzz"\n', 'devices/revoked.toml');
const revoked = (c: DeviceCertificate) => revokedReason(REVOCATIONS, c);

/** Mostly a valid value, sometimes a near miss. */
const field = (valid: readonly string[], bad: readonly string[]) =>
  fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...valid) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });

/** Usually nothing (fc.option is the other way round: usually something). */
const rarely = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });

const body = fc
  .record({
    version: field(['1'], ['2', '"1"', '1.0']),
    device: field(
      ['"gw-1"', '"gw-1"', '"gw-2"', '"gw-1.example.com"'],
      ['"gw 1"', '""', '1', `"${'a'.repeat(254)}"`, '"\\u0000"'],
    ),
    reportKey: field(
      [`"${reportKeyLine(FUZZ_DEVICE)}"`],
      ['"RWQ"', `"${'A'.repeat(56)}"`, `"${reportKeyLine(FUZZ_DEVICE)}="`],
    ),
    age: field([`"${AGE}"`], ['"age1"', `"${AGE.toUpperCase()}"`, `"${AGE.slice(0, -1)}q"`]),
    issued: field(
      ['2026-12-04T10:00:00Z', '2026-12-05T10:04:00+00:00'],
      ['2026-12-04T10:00:00', '2026-12-04', '2030-01-01T00:00:00Z', '"2026-12-04T10:00:00Z"'],
    ),
    expires: fc.option(field(['2027-12-04T10:00:00Z'], ['2026-12-05T00:00:00Z', '2026-01-01T00:00:00Z', '1']), {
      nil: undefined,
    }),
    labels: fc.option(
      field(
        ['[labels]\nsite = "berlin"', '[labels]', '[labels]\n"example.com/role" = "gateway"'],
        ['[labels]\nsite = "ber lin"', '[labels]\nsite = 1', 'labels = "x"'],
      ),
      { nil: undefined },
    ),
    extra: rarely(fc.constantFrom('color = "red"', '# a comment', '', '[other]')),
    omit: rarely(fc.constantFrom('version', 'device', 'reportKey', 'age', 'issued')),
    // The trusted comment agrees with a gw-1 body most of the time, so that the checks after it are reached.
    commentDevice: field(['gw-1'], ['gw-2', 'gw-9', '']),
    timestamp: field(['timestamp:1796378400 '], ['', 'timestamp:x ']),
    otherSigner: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  })
  .map((b) => {
    const lines = [
      b.omit === 'version' ? '' : `keystone-certificate = ${b.version}`,
      b.omit === 'device' ? '' : `device = ${b.device}`,
      b.omit === 'reportKey' ? '' : `report_key = ${b.reportKey}`,
      b.omit === 'age' ? '' : `age_recipient = ${b.age}`,
      b.omit === 'issued' ? '' : `issued = ${b.issued}`,
      b.expires === undefined ? '' : `expires = ${b.expires}`,
      b.extra ?? '',
      b.labels ?? '',
    ].filter(Boolean);
    const comment = `${b.timestamp}device=${b.commentDevice}`;
    return text(signedCertificate(lines.join('\n') + '\n', comment, b.otherSigner ? FUZZ_DEVICE : FUZZ_ENROLMENT));
  });

export const deviceCertificate: FuzzTarget = {
  name: 'device-certificate',
  parses: 'parseCertificate, verifyCertificate (src/identity/certificate.ts): devices/NAME.cert',
  maxBytes: 12 * 1024,
  // Each generated input is signed with tweetnacl (a few ms): fewer runs than the plain parsers in `npm test`.
  testRuns: 600,
  dictionary: [
    '-----BEGIN KEYSTONE SIGNATURE-----\n',
    '-----END KEYSTONE SIGNATURE-----\n',
    'untrusted comment: ',
    'trusted comment: ',
    'device=',
    'timestamp:',
    'keystone-certificate = ',
    'report_key = ',
    'age_recipient = ',
    'issued = ',
    'expires = ',
    '[labels]',
    'RUR',
    'RWQ',
    'age1',
    '2026-12-04T10:00:00Z',
    '\r\n',
  ],
  structured: body,
  check(input) {
    const source = utf8(input);
    let parsed = true;
    try {
      parseCertificate(source, FILE);
    } catch (e) {
      refusedWith(e, (x) => isCertError(x) && (x as IdentityError).code === 'KS_CERT_MALFORMED');
      parsed = false;
    }
    let cert: DeviceCertificate;
    try {
      cert = verifyCertificate(source, { enrollmentKeys: [FUZZ_ENROLMENT], now: CERT_NOW, file: FILE, revoked });
    } catch (e) {
      holds(
        parsed || (e as IdentityError).code === 'KS_CERT_MALFORMED',
        `parseCertificate refused, verifyCertificate with ${(e as IdentityError).code}`,
      );
      return refusedWith(e, isCertError);
    }
    holds(parsed, 'verified what does not parse');
    holds(cert.signer === keyIdHex(FUZZ_ENROLMENT.keyId), `signed by ${cert.signer}, not the trusted key`);
    holds(
      deviceNameProblem(cert.device) === undefined && ageRecipientProblem(cert.ageRecipient) === undefined,
      'a name or a recipient that is not one',
    );
    holds(
      cert.issuedAt <= CERT_NOW + CERTIFICATE_FUTURE_SKEW_MS &&
        (cert.expiresAt === undefined || (cert.expiresAt > cert.issuedAt && cert.expiresAt >= CERT_NOW)),
      'accepted outside its validity',
    );
    holds(revoked(cert) === undefined, `accepted a revoked certificate of ${cert.device}`);
    // What it accepts, signCertificate writes again with the same fields.
    const again = verifyCertificate(
      signCertificate(
        {
          device: cert.device,
          reportKey: cert.reportKeyText,
          ageRecipient: cert.ageRecipient,
          labels: cert.labels,
          issuedAt: cert.issuedAt,
          ...(cert.expiresAt !== undefined && { expiresAt: cert.expiresAt }),
        },
        FUZZ_ENROLMENT,
      ),
      {
        enrollmentKeys: [FUZZ_ENROLMENT],
        now: CERT_NOW,
        file: FILE,
      },
    );
    holds(
      JSON.stringify({ ...again, issuedAt: 0 }) === JSON.stringify({ ...cert, issuedAt: 0 }) &&
        Math.floor(cert.issuedAt / 1000) * 1000 === again.issuedAt,
      'signCertificate does not write back what was accepted',
    );
    return 'accepted';
  },
};
