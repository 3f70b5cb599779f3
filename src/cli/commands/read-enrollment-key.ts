// The `--enrollment-key` files of `keystonectl fleet status` (fleet.ts), read and parsed. Apart from the command so
// that the command reads as its steps.
import { readFileSync } from 'node:fs';
import { parsePublicKey, type PublicKey } from '../../trust/minisign.js';
import { UsageError } from '../io.js';

/** An enrolment public key file (`--enrollment-key`), or a usage error naming it. */
export function readEnrollmentKey(file: string): PublicKey {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`--enrollment-key ${file}: ${(e as Error).message}`);
  }
  try {
    return parsePublicKey(text);
  } catch (e) {
    throw new UsageError(`--enrollment-key ${file}: ${(e as Error).message}`);
  }
}
