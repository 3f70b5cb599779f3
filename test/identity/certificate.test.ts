// Device certificates (SPEC §15): the round trip, every refusal with its code and the file it names, the one
// spelling (any byte changed is refused), and the real minisign checking one as the file's header says an operator
// does.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ageRecipientProblem } from '../../src/identity/age-recipient-syntax.js';
import {
  CERTIFICATE_FUTURE_SKEW_MS,
  certificatePath,
  parseCertificate,
  reportKeyLine,
  verifyCertificate,
  type DeviceCertificate,
} from '../../src/identity/certificate.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import { IdentityError, type IdentityCode } from '../../src/identity/identity-error.js';
import { parseRevocations, revokedReason } from '../../src/identity/revocations.js';
import { formatPublicKey, keyIdHex, type PublicKey } from '../../src/trust/minisign.js';
import { needs } from '../support/requirements.js';
import { AGE, BODY, ENROLL, GW1, GW1_NEW, identityOf, NOW, OTHER, signBody } from './identity-fixture.js';

const FILE = 'devices/gw-1.cert';
const trusted: PublicKey[] = [ENROLL];

const certFor = (
  device = 'gw-1',
  extra: {
    labels?: Record<string, string>;
    issuedAt?: number;
    expiresAt?: number;
    key?: typeof GW1;
    signer?: typeof ENROLL;
  } = {},
) =>
  signCertificate(
    {
      ...identityOf(device, extra.key ?? GW1),
      labels: extra.labels ?? { site: 'berlin' },
      issuedAt: extra.issuedAt ?? NOW,
      ...(extra.expiresAt !== undefined && { expiresAt: extra.expiresAt }),
    },
    extra.signer ?? ENROLL,
  );

const verify = (text: string, o: Partial<Parameters<typeof verifyCertificate>[1]> = {}) =>
  verifyCertificate(text, { enrollmentKeys: trusted, now: NOW, file: FILE, ...o });

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** The last character of 64 bytes in base64 carries 2 bits and 4 unused ones: this one decodes to the same bytes. */
const unusedBitFlipped = (c: string) => B64[B64.indexOf(c) ^ 1]!;

/** The refusal's code, with the file named in its message. */
function refusal(f: () => unknown, file = FILE): { code: IdentityCode; message: string } {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(IdentityError);
    const err = e as IdentityError;
    expect(err.message).toContain(file);
    expect(err.file).toBe(file);
    return { code: err.code, message: err.message };
  }
  throw new Error('not refused');
}

describe('a certificate round trip', () => {
  it('signs, parses and verifies: the fields as given, times to the second, the signer', () => {
    const text = signCertificate(
      {
        ...identityOf('gw-1'),
        labels: { site: 'berlin', 'example.com/role': 'gateway' },
        issuedAt: NOW + 123,
        expiresAt: NOW + 365 * 86_400_000,
      },
      ENROLL,
    );
    const cert = verify(text, { device: 'gw-1' });
    expect(cert).toEqual<DeviceCertificate>({
      device: 'gw-1',
      reportKey: { keyId: GW1.keyId, publicKey: GW1.publicKey },
      reportKeyText: reportKeyLine(GW1),
      ageRecipient: AGE,
      labels: { site: 'berlin', 'example.com/role': 'gateway' },
      issuedAt: NOW,
      expiresAt: NOW + 365 * 86_400_000,
      signer: keyIdHex(ENROLL.keyId),
    });
    const { body, signature } = parseCertificate(text, FILE);
    expect(new TextDecoder().decode(body)).toBe(text.slice(0, text.indexOf('-----BEGIN')));
    expect(signature.trustedComment).toBe(`timestamp:${NOW / 1000} device=gw-1`);
  });

  it('is laid out as documented: the TOML body, then four signature lines between BEGIN and END', () => {
    const lines = certFor().split('\n');
    expect(lines.slice(0, 7)).toEqual([
      'keystone-certificate = 1',
      'device = "gw-1"',
      `report_key = "${reportKeyLine(GW1)}"`,
      `age_recipient = "${AGE}"`,
      'issued = 2026-12-04T10:00:00Z',
      '[labels]',
      'site = "berlin"',
    ]);
    expect(lines[7]).toBe('-----BEGIN KEYSTONE SIGNATURE-----');
    expect(lines[8]).toBe(`untrusted comment: signature from keystone enrolment key ${keyIdHex(ENROLL.keyId)}`);
    expect(lines[9]).toMatch(/^RUR/); // "ED": prehashed
    expect(lines[10]).toBe(`trusted comment: timestamp:${NOW / 1000} device=gw-1`);
    expect(lines[12]).toBe('-----END KEYSTONE SIGNATURE-----');
    expect(lines.slice(13)).toEqual(['']);
  });

  it('without labels or expiry: {} and no expiresAt; a device name that needs quoting reads back', () => {
    const text = signCertificate({ ...identityOf('gw"1\\ü'), labels: {}, issuedAt: NOW }, ENROLL);
    expect(text).not.toContain('[labels]');
    const cert = verify(text);
    expect(cert.labels).toEqual({});
    expect(cert.expiresAt).toBeUndefined();
    expect(cert.device).toBe('gw"1\\ü');
  });

  it('is refused at signing when it could not carry what it is given', () => {
    const bodies: Parameters<typeof signCertificate>[0][] = [
      { ...identityOf('two words'), labels: {}, issuedAt: NOW },
      { ...identityOf('gw-1'), reportKey: 'RWQ', labels: {}, issuedAt: NOW },
      { ...identityOf('gw-1'), ageRecipient: 'age1nope', labels: {}, issuedAt: NOW },
      { ...identityOf('gw-1'), labels: { 'bad key!': 'x' }, issuedAt: NOW },
      { ...identityOf('gw-1'), labels: {}, issuedAt: NOW, expiresAt: NOW },
      { ...identityOf('gw-\ud800'), labels: {}, issuedAt: NOW },
    ];
    for (const body of bodies)
      expect(() => signCertificate(body, ENROLL), JSON.stringify(body)).toThrow(
        expect.objectContaining({ code: 'KS_CERT_MALFORMED' }),
      );
  });

  it('names the file devices/NAME.cert, unless the name cannot be a file name', () => {
    expect(certificatePath('gw-1')).toBe('devices/gw-1.cert');
    for (const name of ['a/b', '..', '.', 'a\\b', 'two words']) expect(certificatePath(name), name).toBeUndefined();
  });
});

describe('refusals: each check its own code, each message the file', () => {
  it('KS_CERT_MALFORMED: not the format', () => {
    const good = certFor();
    const cases: Record<string, string> = {
      empty: '',
      'not a certificate': 'hello\n',
      'no signature block': BODY,
      'two BEGIN lines': good.replace('[labels]', '-----BEGIN KEYSTONE SIGNATURE-----'),
      'something after END': good + 'more\n',
      'a blank line after END': good + '\n',
      'CRLF line endings': good.replace(/\n/g, '\r\n'),
      'a signature line missing': good.replace(/trusted comment: [^\n]*\n/, ''),
      'the untrusted comment changed': good.replace('signature from keystone', 'signature from minisign'),
      'non-canonical base64': good.replace(
        /\n([A-Za-z0-9+/]{86})==\n-----END/,
        (_m, b: string) => `\n${b.slice(0, 85)}${unusedBitFlipped(b[85]!)}==\n-----END`,
      ),
      'too long': 'x'.repeat(11_000) + good,
    };
    for (const [what, text] of Object.entries(cases))
      expect(refusal(() => verify(text)).code, what).toBe('KS_CERT_MALFORMED');
    expect(refusal(() => verify(good.replace(/\n/g, '\r\n'))).message).toContain('CRLF');
  });

  it('KS_CERT_MALFORMED: a signed body the schema refuses, with its line', () => {
    const cases: Record<string, [string, string]> = {
      'an unknown key': [BODY.replace('[labels]', 'color = "red"\n[labels]'), ':6: color: unknown key "color"'],
      'a device name of two words': [BODY.replace('device = "gw-1"', 'device = "gw 1"'), ':2: device:'],
      'a device name of 254 characters': [
        BODY.replace('device = "gw-1"', `device = "${'a'.repeat(254)}"`),
        ':2: device:',
      ],
      'a report key minisign refuses': [
        BODY.replace(/report_key = "[^"]*"/, `report_key = "${'A'.repeat(56)}"`),
        ':3: report_key:',
      ],
      'a report key that is a whole .pub file': [
        BODY.replace(/report_key = "[^"]*"/, `report_key = ${JSON.stringify(formatPublicKey(GW1))}`),
        ':3: report_key:',
      ],
      'an age recipient with a typo': [BODY.replace(AGE, AGE.slice(0, -1) + 'q'), ':4: age_recipient:'],
      'an age recipient in upper case': [BODY.replace(AGE, AGE.toUpperCase()), ':4: age_recipient:'],
      'a local time': [BODY.replace('10:00:00Z', '10:00:00'), ':5: issued:'],
      'no issue time': [BODY.replace('issued = 2026-12-04T10:00:00Z\n', ''), 'issued'],
      'another format version': [
        BODY.replace('keystone-certificate = 1', 'keystone-certificate = 2'),
        ':1: keystone-certificate: format 2',
      ],
      'a bad label': [BODY.replace('site = "berlin"', 'site = "ber lin"'), ':7: labels.site:'],
      'expires before issued': [
        BODY.replace('[labels]', 'expires = 2026-01-01T00:00:00Z\n[labels]'),
        'is not after issued',
      ],
      'invalid TOML': [BODY.replace('device = "gw-1"', 'device = "gw-1'), 'invalid TOML'],
      'a body over 8 KiB': [BODY + `# ${'x'.repeat(8 * 1024)}\n`, 'more than 8192'],
    };
    for (const [what, [body, expected]] of Object.entries(cases)) {
      const r = refusal(() => verify(signBody(body, ENROLL)));
      expect(r.code, what).toBe('KS_CERT_MALFORMED');
      expect(r.message, what).toContain(expected);
    }
  });

  it('KS_CERT_MALFORMED: a trusted comment without device= or without a timestamp', () => {
    expect(refusal(() => verify(signBody(BODY, ENROLL, 'timestamp:1796378400'))).code).toBe('KS_CERT_MALFORMED');
    expect(refusal(() => verify(signBody(BODY, ENROLL, 'timestamp:1796378400 device=gw-1 device=gw-2'))).code).toBe(
      'KS_CERT_MALFORMED',
    );
    expect(refusal(() => verify(signBody(BODY, ENROLL, 'device=gw-1'))).code).toBe('KS_CERT_MALFORMED');
  });

  it('KS_CERT_UNKNOWN_KEY: signed by another key, or no enrolment key trusted at all', () => {
    const r = refusal(() => verify(certFor('gw-1', { signer: OTHER })));
    expect(r.code).toBe('KS_CERT_UNKNOWN_KEY');
    expect(r.message).toContain(keyIdHex(OTHER.keyId));
    expect(r.message).toContain(keyIdHex(ENROLL.keyId));
    expect(refusal(() => verify(certFor(), { enrollmentKeys: [] })).message).toContain('--enrollment-key');
    // The other operator's key, trusted too: it counts.
    expect(verify(certFor('gw-1', { signer: OTHER }), { enrollmentKeys: [ENROLL, OTHER] }).signer).toBe(
      keyIdHex(OTHER.keyId),
    );
  });

  it('KS_CERT_BAD_SIGNATURE: a tampered body byte, a swapped signature, a key id borrowed by another key', () => {
    const good = certFor();
    expect(refusal(() => verify(good.replace('berlin', 'bernin'))).code).toBe('KS_CERT_BAD_SIGNATURE');
    // gw-1's body under gw-2's signature block (the same enrolment key): each is genuine, the pair is not.
    const other = certFor('gw-2');
    const swapped = good.slice(0, good.indexOf('-----BEGIN')) + other.slice(other.indexOf('-----BEGIN'));
    expect(refusal(() => verify(swapped)).code).toBe('KS_CERT_BAD_SIGNATURE');
    // A key that claims the enrolment key's id: the id names a key, it does not prove one.
    const impostor = { ...OTHER, keyId: ENROLL.keyId };
    expect(refusal(() => verify(certFor('gw-1', { signer: impostor }))).code).toBe('KS_CERT_BAD_SIGNATURE');
    // The trusted comment edited (gw-1 → gw-2): the global signature fails before any name is compared.
    expect(refusal(() => verify(good.replace('device=gw-1', 'device=gw-2'))).code).toBe('KS_CERT_BAD_SIGNATURE');
  });

  it("KS_CERT_WRONG_DEVICE: devices/gw-2.cert holding gw-1's certificate; a signed comment naming another device", () => {
    const r = refusal(
      () => verify(certFor('gw-1'), { device: 'gw-2', file: 'devices/gw-2.cert' }),
      'devices/gw-2.cert',
    );
    expect(r.code).toBe('KS_CERT_WRONG_DEVICE');
    expect(r.message).toContain('gw-1');
    expect(r.message).toContain('gw-2');
    expect(refusal(() => verify(signBody(BODY, ENROLL, 'timestamp:1796378400 device=gw-9'))).code).toBe(
      'KS_CERT_WRONG_DEVICE',
    );
  });

  it('KS_CERT_EXPIRED: past expires, or issued more than 5 minutes ahead of this clock', () => {
    const expiring = certFor('gw-1', { expiresAt: NOW + 3_600_000 });
    expect(verify(expiring, { now: NOW + 3_600_000 }).device).toBe('gw-1');
    const r = refusal(() => verify(expiring, { now: NOW + 3_600_001 }));
    expect(r.code).toBe('KS_CERT_EXPIRED');
    expect(r.message).toContain('expired at 2026-12-04T11:00:00.000Z');
    expect(verify(certFor(), { now: NOW - CERTIFICATE_FUTURE_SKEW_MS }).device).toBe('gw-1');
    const f = refusal(() => verify(certFor(), { now: NOW - CERTIFICATE_FUTURE_SKEW_MS - 1 }));
    expect(f.code).toBe('KS_CERT_EXPIRED');
    expect(f.message).toContain('more than 5 minutes after this clock');
  });

  it('KS_CERT_REVOKED: by name (every certificate of the device), by key (only that one), with the reason', () => {
    const revocations = parseRevocations(
      `[[revoked]]\ndevice = "gw-1"\nreport_key = "${reportKeyLine(GW1)}"\nreason = "reinstalled 2026-12-02"\n\n[[revoked]]\ndevice = "gw-3"\nreason = "stolen 2026-12-01"\n`,
      'devices/revoked.toml',
    );
    const revoked = (c: DeviceCertificate) => revokedReason(revocations, c);
    const byKey = refusal(() => verify(certFor('gw-1'), { revoked }));
    expect(byKey.code).toBe('KS_CERT_REVOKED');
    expect(byKey.message).toContain('reinstalled 2026-12-02');
    // gw-1 re-enrolled with its new key: that certificate counts.
    expect(verify(certFor('gw-1', { key: GW1_NEW }), { revoked }).reportKeyText).toBe(reportKeyLine(GW1_NEW));
    const byName = refusal(
      () => verify(certFor('gw-3', { key: GW1_NEW }), { revoked, file: 'devices/gw-3.cert' }),
      'devices/gw-3.cert',
    );
    expect(byName.code).toBe('KS_CERT_REVOKED');
    expect(byName.message).toContain('stolen 2026-12-01');
    expect(verify(certFor('gw-2'), { revoked }).device).toBe('gw-2');
  });
});

describe('one spelling', () => {
  const text = certFor('gw-1', { labels: { site: 'berlin', role: 'gateway' }, expiresAt: NOW + 86_400_000 });
  const bytes = Buffer.from(text);

  it('any single byte changed anywhere makes verification throw', () => {
    fc.assert(
      fc.property(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 }), (at, byte) => {
        fc.pre(bytes[at] !== byte);
        const changed = Buffer.from(bytes);
        changed[at] = byte;
        expect(() => verify(changed.toString('utf8'))).toThrow(IdentityError);
      }),
      { numRuns: 3000 },
    );
  });

  it('every position, changed to one other byte, is refused too (the exhaustive form of the property)', () => {
    for (let at = 0; at < bytes.length; at++) {
      const changed = Buffer.from(bytes);
      changed[at] = bytes[at] === 0x41 ? 0x42 : 0x41;
      expect(() => verify(changed.toString('utf8')), `byte ${at}`).toThrow(IdentityError);
    }
  });
});

describe('age recipients', () => {
  it('take age1 and the bech32 of 32 bytes, lower case, checksum and padding right', () => {
    expect(ageRecipientProblem(AGE)).toBeUndefined();
    for (const bad of [
      '',
      'age1',
      AGE.toUpperCase(),
      AGE.slice(0, -1) + 'q',
      AGE + 'q',
      'agf1' + AGE.slice(4),
      AGE.replace('q', 'b'),
      'age1' + 'q'.repeat(58),
    ])
      expect(ageRecipientProblem(bad), bad).toBeDefined();
  });
});

const minisign = needs('minisign');
describe.skipIf(minisign.skip)(
  minisign.title('the real minisign checks a certificate, split as certificate.ts says'),
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'keystone-cert-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** The shell lines of certificate.ts's header comment, exactly as an operator copies them. */
    const documented = readFileSync(new URL('../../src/identity/certificate.ts', import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => /^\/\/ {3}(awk|minisign) /.test(l))
      .map((l) => l.slice(5));

    it('the header documents the split and the check', () => {
      expect(documented).toHaveLength(3);
      expect(documented[2]).toBe('minisign -V -m body -x sig -p enroll.pub');
    });

    it('verifies a genuine one, and refuses one whose body was altered', () => {
      writeFileSync(join(dir, 'enroll.pub'), formatPublicKey(ENROLL));
      writeFileSync(join(dir, 'gw-1.cert'), certFor());
      const out = execFileSync('sh', ['-ec', documented.join('\n')], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
      expect(out).toContain('Signature and comment signature verified');
      expect(out).toContain(`Trusted comment: timestamp:${NOW / 1000} device=gw-1`);
      writeFileSync(join(dir, 'gw-1.cert'), certFor().replace('berlin', 'bernin'));
      expect(() =>
        execFileSync('sh', ['-ec', documented.join('\n')], { cwd: dir, encoding: 'utf8', stdio: 'pipe' }),
      ).toThrow(/Signature verification failed/);
    });
  },
);
