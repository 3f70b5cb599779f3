// Device identity failures (SPEC §15): the device's own keys, the certificates that enrol it, the revocations that
// end them. Each check has its own stable code, so operators (and tests) tell a stolen device from a typo.
import { CodedError } from '../core/errors.js';

export type IdentityCode =
  /** A key file of the device is gone while the state directory says the device had one (a copy, a wipe). */
  | 'KS_IDENTITY_MISSING'
  /** A key file, or its directory, can be read or written by another user than the agent's. */
  | 'KS_IDENTITY_UNSAFE'
  /** A key file does not parse (minisign secret key, age identity). */
  | 'KS_IDENTITY_MALFORMED'
  /** A certificate does not parse: not the format `keystonectl enroll` writes. */
  | 'KS_CERT_MALFORMED'
  /** A certificate signed by a key that is not an enrolment key trusted here. */
  | 'KS_CERT_UNKNOWN_KEY'
  /** A certificate whose signature does not verify against the enrolment key it names. */
  | 'KS_CERT_BAD_SIGNATURE'
  /** A certificate for another device name than the file or the report it is used for. */
  | 'KS_CERT_WRONG_DEVICE'
  /** A certificate past its `expires` time, or issued in the future. */
  | 'KS_CERT_EXPIRED'
  /** A certificate devices/revoked.toml names. */
  | 'KS_CERT_REVOKED'
  /** A certificate for this device that names other keys than the device holds (reinstalled, not re-enrolled). */
  | 'KS_CERT_OTHER_KEY'
  /** devices/revoked.toml does not parse or breaks its schema. */
  | 'KS_REVOCATIONS_INVALID';

/** Refuses a key, a certificate or a revocation list: which file, which check. Exit code 2 at the CLI. */
export class IdentityError extends CodedError<IdentityCode, object> {
  override readonly name = 'IdentityError';
  constructor(
    code: IdentityCode,
    message: string,
    readonly file?: string,
  ) {
    super(code, message);
  }
}
