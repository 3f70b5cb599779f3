// What the `keystonectl secret` commands read from the command line besides the repository: the enrolment public keys
// that decide which certificates count, a secret's value (a file or stdin: never an argument), and the fleet target
// names, each checked against fleet.toml.
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Fleet } from '../core/fleet.js';
import { SecretError } from '../secrets/secret-error.js';
import { MAX_SECRET_FILE_BYTES } from '../core/secret-paths.js';
import { targetNameProblem } from '../secrets/target-key.js';
import { parsePublicKey, type PublicKey } from '../trust/minisign.js';
import { UsageError, type CliIo } from './io.js';

/** `--enrollment-key PUB` (repeatable): minisign public keys, as `keystonectl enroll --check` reads them. */
export function enrollmentKeysFrom(files: readonly string[], cwd: string): PublicKey[] {
  return files.map((f) => {
    let text: string;
    try {
      text = readFileSync(resolve(cwd, f), 'utf8');
    } catch (e) {
      throw new UsageError(
        `cannot read --enrollment-key ${f}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    try {
      return parsePublicKey(text);
    } catch (e) {
      throw new UsageError(`--enrollment-key ${f}: ${(e as Error).message}`);
    }
  });
}

/** Each `--target`, once, in fleet.toml and able to have secrets; a name fleet.toml lacks is named with those it has. */
export function checkTargets(names: readonly string[], fleet: Fleet): string[] {
  const known = fleet.targets.map((t) => t.name);
  for (const name of names) {
    if (!known.includes(name))
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `fleet.toml has no target ${JSON.stringify(name)} (${known.length ? `its targets: ${known.join(', ')}` : 'it has no targets'}): secrets are encrypted to fleet targets`,
        'fleet.toml',
      );
    const problem = targetNameProblem(name);
    if (problem) throw new SecretError('KS_SECRET_OPERATOR', problem, 'fleet.toml');
  }
  return [...new Set(names)];
}

/**
 * A secret's value, byte for byte: from `--file` (`-`: stdin), else piped on stdin. Never from a terminal (typed, it
 * would echo; pasted, it may land in a scrollback) and never empty (a value read from an empty pipe is a mistake).
 */
export async function readSecretValue(file: string | undefined, io: CliIo): Promise<Uint8Array> {
  let bytes: Uint8Array;
  if (file !== undefined && file !== '-') {
    const path = resolve(io.cwd, file);
    try {
      const st = statSync(path);
      if (!st.isFile()) throw new UsageError(`--file ${file} is not a file`);
      if (st.size > MAX_SECRET_FILE_BYTES)
        throw new UsageError(
          `--file ${file} is ${st.size} bytes: a secret is at most ${MAX_SECRET_FILE_BYTES} (encrypted)`,
        );
      bytes = readFileSync(path);
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw new UsageError(`cannot read --file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  } else {
    const stdin = io.stdin ?? process.stdin;
    if (stdin.isTTY)
      throw new UsageError(
        'the value comes from stdin, which is a terminal here: give --file FILE, or redirect a file (< FILE); it is never an argument',
      );
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stdin) {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      size += b.length;
      if (size > MAX_SECRET_FILE_BYTES)
        throw new UsageError(`stdin: more than ${MAX_SECRET_FILE_BYTES} bytes: a secret is at most that (encrypted)`);
      chunks.push(b);
    }
    bytes = Buffer.concat(chunks);
  }
  if (bytes.length === 0)
    throw new UsageError(
      `the value is empty (${file !== undefined && file !== '-' ? `--file ${file}` : 'nothing on stdin'}): an empty secret is refused`,
    );
  return bytes;
}

/** What to do after a command changed secrets/: devices refuse a file SHA256SUMS does not list. */
export const SIGN_REMINDER =
  'next: keystonectl sign --key KEY (secrets/ is signed with the recipes: devices refuse a file SHA256SUMS does not list), then commit';
