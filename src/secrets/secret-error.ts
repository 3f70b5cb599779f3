// Secret failures (SPEC §16): each names the secret (or the target key) and why, never a value.
import { CodedError } from '../core/errors.js';

export type SecretCode =
  /** secrets/NAME.age, or the target's key file, is not in the revision. */
  | 'KS_SECRET_MISSING'
  /** This device is not among the recipients: of its target's key file, or the secret is not encrypted to its target. */
  | 'KS_SECRET_NOT_RECIPIENT'
  /** Not an age file, a damaged one, or a target key file that does not hold an age identity. */
  | 'KS_SECRET_CORRUPT'
  /** The device is in no fleet.toml target: secrets are readable by targets, and this device has none. */
  | 'KS_SECRET_NO_TARGET'
  /** A component reads a secret the agent does not hold (the revision that gave it was not loaded in this run). */
  | 'KS_SECRET_UNAVAILABLE'
  /** An operator's command that cannot go on: no operator identity, a recipients file that is not the signed one. */
  | 'KS_SECRET_OPERATOR';

export class SecretError extends CodedError<SecretCode, object> {
  override readonly name = 'SecretError';
  constructor(
    code: SecretCode,
    message: string,
    /** The repository file concerned, when there is one. */
    readonly file?: string,
    /** The secret concerned, when there is one. */
    readonly secret?: string,
  ) {
    super(code, message);
  }
}
