// A ref or commit the fleet's repository does not have (keystonectl fleet status --commit X): bad input.
import { CodedError } from '../core/errors.js';

/** A ref or commit the repository does not have: bad input (exit 2), not a failed operation. */
export class UnknownRefError extends CodedError<'KS_GIT_REF_NOT_FOUND', object> {
  constructor(message: string) {
    super('KS_GIT_REF_NOT_FOUND', message);
  }
}
