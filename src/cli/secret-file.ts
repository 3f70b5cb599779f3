// Secrets (tokens, the webhook secret) come from a file or an environment variable, never from the command line,
// where every user of the machine can read them in the process list.
import { readFileSync } from 'node:fs';
import { UsageError } from './io.js';

/** A secret from a file (first line, trimmed) or an environment variable. */
export function secretFrom(file: string | undefined, envValue: string | undefined, what: string): string | undefined {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new UsageError(
        `cannot read the ${what} file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    const secret = text.split('\n', 1)[0]!.trim();
    if (!secret) throw new UsageError(`the ${what} file ${file} is empty`);
    return secret;
  }
  return envValue ? envValue.trim() : undefined;
}
