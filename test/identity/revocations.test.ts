// devices/revoked.toml (SPEC §15): what it revokes (a device, or one report key of it), and every problem named with
// the file, the TOML path and the line, the fleet.toml way.
import { describe, expect, it } from 'vitest';
import { parseCertificate, reportKeyLine } from '../../src/identity/certificate.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import {
  checkRevocations,
  NO_REVOCATIONS,
  parseRevocations,
  revokedReason,
  RevocationsError,
  REVOCATIONS_FILE,
} from '../../src/identity/revocations.js';
import { ENROLL, GW1, GW1_NEW, identityOf, NOW } from './identity-fixture.js';

const FILE = REVOCATIONS_FILE;
const cert = (device: string, key = GW1) =>
  parseCertificate(
    signCertificate({ ...identityOf(device, key), labels: {}, issuedAt: NOW }, ENROLL),
    `devices/${device}.cert`,
  ).cert;

describe('devices/revoked.toml', () => {
  const text = `# devices that no longer count
[[revoked]]
device = "gw-3"
reason = "stolen 2026-12-01"

[[revoked]]
device = "gw-1"
report_key = "${reportKeyLine(GW1)}"   # the key before the reinstall
reason = "  reinstalled 2026-12-02  "
`;

  it('parses every entry with its line; an empty file or none revokes nothing', () => {
    const r = parseRevocations(text, FILE);
    expect(r.file).toBe(FILE);
    expect(r.entries.map((e) => [e.device, e.reportKeyText, e.reason, e.line])).toEqual([
      ['gw-3', undefined, 'stolen 2026-12-01', 2],
      ['gw-1', reportKeyLine(GW1), 'reinstalled 2026-12-02', 6],
    ]);
    expect(parseRevocations('', FILE).entries).toEqual([]);
    expect(parseRevocations('# nobody yet\n', FILE).entries).toEqual([]);
    expect(revokedReason(NO_REVOCATIONS, cert('gw-3'))).toBeUndefined();
  });

  it('revokes every certificate of a device named alone, and only the named key of one named with its key', () => {
    const r = parseRevocations(text, FILE);
    expect(revokedReason(r, cert('gw-3'))).toBe('stolen 2026-12-01');
    expect(revokedReason(r, cert('gw-3', GW1_NEW))).toBe('stolen 2026-12-01');
    expect(revokedReason(r, cert('gw-1'))).toBe('reinstalled 2026-12-02');
    expect(revokedReason(r, cert('gw-1', GW1_NEW))).toBeUndefined();
    expect(revokedReason(r, cert('gw-2'))).toBeUndefined();
  });

  it("a key id is not the key: another key under gw-1's old key id is not the one revoked", () => {
    const r = parseRevocations(text, FILE);
    const lookalike = { ...GW1_NEW, keyId: GW1.keyId };
    expect(revokedReason(r, cert('gw-1', lookalike))).toBeUndefined();
  });

  it('refuses a broken file with every problem: file, TOML path, line and code (KS_REVOCATIONS_INVALID)', () => {
    const bad = `[[revoked]]
device = "gw 3"
reason = "stolen"

[[revoked]]
device = "gw-1"
report_key = "RWQnope"
reson = "typo"

[[revoked]]
device = "gw-2"
reason = ""
`;
    let err: RevocationsError | undefined;
    try {
      parseRevocations(bad, FILE);
    } catch (e) {
      err = e as RevocationsError;
    }
    expect(err).toBeInstanceOf(RevocationsError);
    expect(err!.code).toBe('KS_REVOCATIONS_INVALID');
    expect(err!.file).toBe(FILE);
    expect(err!.diagnostics.map((d) => [d.file, d.path, d.line, d.code])).toEqual([
      [FILE, 'revoked[0].device', 2, 'KS_BAD_NAME'],
      [FILE, 'revoked[1].reason', 5, 'KS_MISSING_FIELD'],
      [FILE, 'revoked[1].report_key', 7, 'KS_INVALID_VALUE'],
      [FILE, 'revoked[1].reson', 8, 'KS_UNKNOWN_KEY'],
      [FILE, 'revoked[2].reason', 12, 'KS_INVALID_VALUE'],
    ]);
    expect(err!.message).toContain(`${FILE}:8: revoked[1].reson: unknown key "reson" (did you mean "reason"?)`);
    expect(err!.message).toContain('5 errors');
  });

  it('names a TOML syntax error with its line; checkRevocations returns the diagnostics instead of throwing', () => {
    const r = checkRevocations(FILE, '[[revoked]]\ndevice = "gw-1\n');
    expect(r.revocations).toBeUndefined();
    expect(r.diagnostics).toEqual([expect.objectContaining({ file: FILE, code: 'KS_TOML_SYNTAX', line: 2 })]);
    expect(checkRevocations(FILE, 'revoked = "all"\n').diagnostics[0]).toMatchObject({
      path: 'revoked',
      line: 1,
      code: 'KS_INVALID_TYPE',
    });
    expect(
      checkRevocations(FILE, `[[revoked]]\ndevice = "gw-1"\nreason = "${'x'.repeat(201)}"\n`).diagnostics[0],
    ).toMatchObject({ path: 'revoked[0].reason', line: 3 });
    expect(
      checkRevocations(FILE, '[[revoked]]\ndevice = "gw-1"\nreason = "two\\nlines"\n').diagnostics[0],
    ).toMatchObject({ path: 'revoked[0].reason', line: 3 });
  });
});
