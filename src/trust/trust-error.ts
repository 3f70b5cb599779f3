// Trust failures: each threat has its own stable code so operators (and tests) can tell them apart.
import { CodedError } from '../core/errors.js';

export type TrustCode =
  | 'KS_UNSIGNED'
  | 'KS_SIGNATURE_MALFORMED'
  | 'KS_SIGNATURE_TOO_LARGE'
  | 'KS_SIGNATURE_INVALID'
  | 'KS_SIGNATURE_NONCANONICAL'
  | 'KS_TRUSTED_COMMENT_INVALID'
  | 'KS_SIGNATURE_NO_TIMESTAMP'
  | 'KS_SIGNATURE_WRONG_REF'
  | 'KS_SIGNATURE_NO_REF'
  | 'KS_UNTRUSTED_KEY'
  | 'KS_THRESHOLD_NOT_MET'
  | 'KS_WEAK_KEY'
  | 'KS_KEY_MALFORMED'
  | 'KS_KEY_PASSWORD'
  | 'KS_SUMS_MALFORMED'
  | 'KS_SUMS_TOO_LARGE'
  | 'KS_FILE_NOT_SIGNED'
  | 'KS_DIGEST_MISMATCH'
  | 'KS_SIGNED_FILE_MISSING'
  | 'KS_SIGNATURE_REPLAYED'
  | 'KS_SIGNATURE_TOO_OLD'
  | 'KS_SIGNATURE_FROM_FUTURE';

/** Refuses a revision or a key: which file, which key, which check. Exit code 2 at the CLI. */
export class TrustError extends CodedError<TrustCode, object> {
  constructor(
    code: TrustCode,
    message: string,
    readonly file?: string,
    readonly keyId?: string,
  ) {
    super(code, message);
  }
}
