// devices/revoked.toml (SPEC §15): the certificates that no longer count. Signed with the recipes (listed in
// SHA256SUMS), so whoever can only push cannot revoke an honest device or un-revoke a stolen one. An entry names a
// device, and optionally one report key of it: a reinstalled device's old key can be revoked while its new
// certificate still counts.
//
//   [[revoked]]
//   device = "gw-3"
//   report_key = "RWQ…"      # optional: only the certificate(s) with this report key; omitted: every one of gw-3
//   reason = "stolen 2026-12-01"
//
// Parsed like fleet.toml: every problem is a diagnostic naming the file, the TOML path and the line
// (checkRevocations), or, for callers that want a value or an error, one IdentityError carrying them all
// (parseRevocations). Looking a certificate up costs one map lookup, whatever the length of the list.
import * as v from 'valibot';
import { refine, strictObject } from '../core/valid.js';
import { CODES, formatDiagnostic, sortDiagnostics, type Diagnostic } from '../core/errors.js';
import { deviceNameField } from '../core/label-schemas.js';
import { issue } from '../core/schema-rules.js';
import { parseTomlDocument } from '../core/toml-document.js';
import { parsePublicKey, type PublicKey } from '../trust/minisign.js';
import type { DeviceCertificate } from './certificate.js';
import { reportKeyProblem } from './report-key.js';
import { IdentityError } from './identity-error.js';

export const REVOCATIONS_FILE = 'devices/revoked.toml';
/** A reason is shown in messages, reports and the fleet view: one short line. */
const MAX_REASON_CHARS = 200;

export interface Revocation {
  device: string;
  /** Only the certificates with this report key; absent: every certificate of the device. */
  reportKey?: PublicKey;
  reportKeyText?: string;
  reason: string;
  /** Where the entry is, for messages. */
  line?: number;
}

export interface Revocations {
  file: string;
  entries: readonly Revocation[];
  /** The entries by device name. */
  byDevice: ReadonlyMap<string, readonly Revocation[]>;
}

/** No devices/revoked.toml: nothing is revoked. */
export const NO_REVOCATIONS: Revocations = { file: REVOCATIONS_FILE, entries: [], byDevice: new Map() };

const revokedSchema = strictObject({
  revoked: v.optional(
    v.array(
      strictObject({
        device: deviceNameField,
        report_key: v.optional(
          v.pipe(
            v.string(),
            refine<string>((t, ctx) => {
              const p = reportKeyProblem(t);
              if (p)
                issue(
                  ctx,
                  CODES.INVALID_VALUE,
                  p,
                  "the base64 line of the device's minisign public key, as its certificate's report_key spells it",
                );
            }),
          ),
        ),
        reason: v.pipe(
          v.string(),
          refine<string>((t, ctx) => {
            if (!t.trim())
              issue(
                ctx,
                CODES.INVALID_VALUE,
                'must not be empty',
                'say why, e.g. "stolen 2026-12-01": it is shown wherever the device\'s reports are',
              );
            else if (t.length > MAX_REASON_CHARS || /\p{Cc}/u.test(t))
              issue(ctx, CODES.INVALID_VALUE, `must be one line of at most ${MAX_REASON_CHARS} characters`);
          }),
        ),
      }),
    ),
    [],
  ),
});

/** Refuses devices/revoked.toml: every diagnostic, each with the file, the TOML path and the line. */
export class RevocationsError extends IdentityError {
  constructor(
    readonly diagnostics: Diagnostic[],
    file: string,
  ) {
    super(
      'KS_REVOCATIONS_INVALID',
      `${file} is invalid (${diagnostics.length} error${diagnostics.length === 1 ? '' : 's'}):\n` +
        diagnostics.map((d) => '  ' + formatDiagnostic(d)).join('\n'),
      file,
    );
  }
}

/** Parses the file the fleet.toml way: the revocations when there is no diagnostic, else the diagnostics. */
export function checkRevocations(file: string, text: string): { revocations?: Revocations; diagnostics: Diagnostic[] } {
  const doc = parseTomlDocument(file, text, revokedSchema);
  if (doc.diagnostics.length) return { diagnostics: sortDiagnostics(doc.diagnostics) };
  const entries: Revocation[] = doc.value!.revoked.map((r, i) => {
    const line = doc.diagnostic(CODES.INVALID_VALUE, ['revoked', i], '').line;
    return {
      device: r.device,
      ...(r.report_key !== undefined && { reportKey: parsePublicKey(r.report_key), reportKeyText: r.report_key }),
      reason: r.reason.trim(),
      ...(line !== undefined && { line }),
    };
  });
  const byDevice = new Map<string, Revocation[]>();
  for (const e of entries) byDevice.set(e.device, [...(byDevice.get(e.device) ?? []), e]);
  return { revocations: { file, entries, byDevice }, diagnostics: [] };
}

/** The revocations, or RevocationsError (KS_REVOCATIONS_INVALID) with every diagnostic. */
export function parseRevocations(text: string, file: string): Revocations {
  const r = checkRevocations(file, text);
  if (!r.revocations) throw new RevocationsError(r.diagnostics, file);
  return r.revocations;
}

const sameKey = (a: PublicKey, b: PublicKey) =>
  a.publicKey.length === b.publicKey.length && a.publicKey.every((x, i) => x === b.publicKey[i]);

/** Why the certificate is revoked (the entry's reason), or undefined. Pass as verifyCertificate's `revoked`. */
export function revokedReason(revocations: Revocations, cert: DeviceCertificate): string | undefined {
  // The key material decides, not its id: an id is 8 bytes anyone may reuse for a key of their own.
  return revocations.byDevice
    .get(cert.device)
    ?.find((e) => e.reportKey === undefined || sameKey(e.reportKey, cert.reportKey))?.reason;
}
