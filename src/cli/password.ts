// Where a secret key's password comes from: --password-file, else KEYSTONE_KEY_PASSWORD, else a prompt on a terminal.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { secretKeyIsEncrypted } from '../trust/minisign.js';
import { UsageError, type CliIo } from './io.js';

const enc = new TextEncoder();

export interface PasswordSource {
  file?: string;
  /** Ask twice (making a key) rather than once (using one). */
  confirm?: boolean;
  purpose: string;
}

/** The password bytes, or undefined when there is no source and no terminal to ask on. */
export async function readPassword(io: CliIo, src: PasswordSource): Promise<Uint8Array | undefined> {
  if (src.file !== undefined) {
    // The first line, as minisign reads a piped password: a trailing newline is not part of it.
    const text = readFileSync(resolve(io.cwd, src.file), 'utf8');
    return enc.encode(text.split(/\r?\n/)[0] ?? '');
  }
  const env = io.env.KEYSTONE_KEY_PASSWORD;
  if (env !== undefined) return enc.encode(env);
  if (!io.stdin?.isTTY) return undefined;
  const first = await prompt(io, `Password for ${src.purpose}: `);
  if (src.confirm) {
    const second = await prompt(io, 'Password (again): ');
    if (first !== second) throw new UsageError('the passwords do not match');
  }
  return enc.encode(first);
}

/**
 * The password of the secret key in `keyText` (read from `keyFile`) when it is encrypted, else undefined; a protected
 * key with no source for its password is a usage error (`keystonectl sign`, `keystonectl fleet enroll`).
 */
export async function keyPassword(
  io: CliIo,
  keyText: string,
  keyFile: string,
  passwordFile: string | undefined,
): Promise<Uint8Array | undefined> {
  if (!secretKeyIsEncrypted(keyText)) return undefined;
  const password = await readPassword(io, {
    ...(passwordFile !== undefined && { file: passwordFile }),
    purpose: keyFile,
  });
  if (password === undefined)
    throw new UsageError(
      `${keyFile} is password-protected: give --password-file FILE or KEYSTONE_KEY_PASSWORD, or run on a terminal`,
    );
  return password;
}

/** Reads one line from the terminal without echoing it. */
function prompt(io: CliIo, question: string): Promise<string> {
  const stdin = io.stdin!;
  io.stderr.write(question);
  return new Promise((resolvePromise, reject) => {
    let value = '';
    stdin.setRawMode(true);
    stdin.resume();
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      io.stderr.write('\n');
      if (err) reject(err);
      else resolvePromise(value);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new UsageError('interrupted'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}
