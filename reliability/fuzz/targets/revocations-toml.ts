// devices/revoked.toml (src/identity/revocations.ts checkRevocations, parseRevocations, revokedReason): signed with
// the recipes, so what reaches the parser passed the signature; it is still the repository's text, and the contract
// is the revision parsers': diagnostics with a code, the file, a TOML path and a line inside the file.
import { deviceNameProblem } from '../../../src/core/labels.js';
import { reportKeyLine, type DeviceCertificate } from '../../../src/identity/certificate.js';
import {
  checkRevocations,
  parseRevocations,
  revokedReason,
  RevocationsError,
} from '../../../src/identity/revocations.js';
import { checkDiagnostics } from '../diagnostics-contract.js';
import { holds, utf8, type FuzzTarget } from '../fuzz-target.js';
import { FUZZ_DEVICE } from '../identity-fixture.js';
import { tomlDocuments } from '../toml-grammar.js';

const FILE = 'devices/revoked.toml';
const KEY = reportKeyLine(FUZZ_DEVICE);

export const revocationsToml: FuzzTarget = {
  name: 'revocations-toml',
  parses: 'checkRevocations, parseRevocations, revokedReason (src/identity/revocations.ts): devices/revoked.toml',
  maxBytes: 8 * 1024,
  testRuns: 1_000,
  dictionary: ['[[revoked]]', 'device = ', 'report_key = ', 'reason = ', `"${KEY}"`, '"gw-1"'],
  structured: tomlDocuments({
    tables: ['[revoked]', 'revoked', 'other'],
    keys: ['device', 'report_key', 'reason', 'reson', 'revoked'],
    values: [
      '"gw-1"',
      '"gw 1"',
      '"stolen 2026-12-01"',
      `"${KEY}"`,
      '"RWQ"',
      `"${'x'.repeat(201)}"`,
      '"two\\nlines"',
      '"  "',
    ],
  }),
  check(input) {
    const source = utf8(input);
    const r = checkRevocations(FILE, source);
    checkDiagnostics(r.diagnostics, new Map([[FILE, source]]));
    holds(
      (r.revocations === undefined) === r.diagnostics.length > 0,
      'revocations must be returned exactly when there is no diagnostic',
    );
    try {
      parseRevocations(source, FILE);
      holds(r.revocations !== undefined, 'parseRevocations accepted what checkRevocations refused');
    } catch (e) {
      holds(
        e instanceof RevocationsError &&
          e.code === 'KS_REVOCATIONS_INVALID' &&
          e.diagnostics.length === r.diagnostics.length,
        `parseRevocations threw ${(e as Error).message}`,
      );
    }
    if (!r.revocations) return 'refused';
    for (const e of r.revocations.entries) {
      holds(deviceNameProblem(e.device) === undefined, `revoked ${JSON.stringify(e.device)}, not a device name`);
      holds(
        e.reason.length > 0 && !/\p{Cc}/u.test(e.reason),
        `a reason that is not one line: ${JSON.stringify(e.reason)}`,
      );
      const cert: DeviceCertificate = {
        device: e.device,
        reportKey: FUZZ_DEVICE,
        reportKeyText: KEY,
        ageRecipient: '',
        labels: {},
        issuedAt: 0,
        signer: '',
      };
      holds(
        revokedReason(r.revocations, cert) !== undefined || (e.reportKeyText !== undefined && e.reportKeyText !== KEY),
        `${e.device} is listed but not revoked`,
      );
    }
    return 'accepted';
  },
};
