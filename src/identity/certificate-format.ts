// The device certificate's format (certificate.ts has its layout): the body's strict schema, the signature block's
// fixed lines and untrusted comment, the size limits. Apart so the reader (certificate.ts) and the writer
// (sign-certificate.ts) share one spelling of it.
import { TomlDate } from 'smol-toml';
import * as v from 'valibot';
import { number, refine, strictObject } from '../core/valid.js';
import { CODES } from '../core/errors.js';
import { labelSelector, deviceNameField } from '../core/label-schemas.js';
import { issue } from '../core/schema-rules.js';
import { keyIdHex } from '../trust/minisign.js';
import { ageRecipientProblem } from './age-recipient-syntax.js';
import { reportKeyProblem } from './report-key.js';
import { IdentityError } from './identity-error.js';

/** The body (the signed TOML) is small: two keys, a name, a few labels. Larger is refused before any parsing. */
export const MAX_CERTIFICATE_BODY_BYTES = 8 * 1024;
/** A body and its signature block (about 400 bytes). */
export const MAX_CERTIFICATE_CHARS = MAX_CERTIFICATE_BODY_BYTES + 2 * 1024;

export const BEGIN = '-----BEGIN KEYSTONE SIGNATURE-----';
export const END = '-----END KEYSTONE SIGNATURE-----';
export const FORMAT_VERSION = 1;

export const untrustedCommentFor = (keyId: Uint8Array) => `signature from keystone enrolment key ${keyIdHex(keyId)}`;

// ---------------------------------------------------------------------------------------------------------------
// The body's schema: strict (an unknown key is refused, not ignored: a newer format must not be half-read as this one).

const offsetDateTime = v.pipe(
  v.date(),
  refine<Date>((d, ctx) => {
    if (!(d instanceof TomlDate) || !d.isDateTime() || d.isLocal() || Number.isNaN(d.getTime()))
      issue(ctx, CODES.INVALID_VALUE, 'must be a date and time with its offset', 'e.g. 2026-12-04T10:00:00Z');
  }),
);

export const certificateSchema = strictObject({
  'keystone-certificate': v.pipe(
    number(),
    refine<number>((n, ctx) => {
      if (n !== FORMAT_VERSION)
        issue(
          ctx,
          CODES.INVALID_VALUE,
          `format ${n} is not one this Keystone reads`,
          `keystone-certificate = ${FORMAT_VERSION}`,
        );
    }),
  ),
  device: deviceNameField,
  report_key: v.pipe(
    v.string(),
    refine<string>((t, ctx) => {
      const p = reportKeyProblem(t);
      if (p)
        issue(
          ctx,
          CODES.INVALID_VALUE,
          p,
          "the base64 line of the device's minisign public key, as `keystone identity` prints it",
        );
    }),
  ),
  age_recipient: v.pipe(
    v.string(),
    refine<string>((t, ctx) => {
      const p = ageRecipientProblem(t);
      if (p)
        issue(ctx, CODES.INVALID_VALUE, p, 'age1 and the bech32 of an X25519 key, as `keystone identity` prints it');
    }),
  ),
  issued: offsetDateTime,
  expires: v.optional(offsetDateTime),
  labels: v.optional(labelSelector),
});

export const malformed = (file: string, detail: string) =>
  new IdentityError('KS_CERT_MALFORMED', `${file}: not a keystone certificate: ${detail}`, file);
