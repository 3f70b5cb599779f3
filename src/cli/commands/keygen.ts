// `keystonectl keygen --out PREFIX`: a minisign-compatible key pair (PREFIX.key mode 0600, PREFIX.pub).
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { formatPublicKey, formatSecretKey, generateKey, keyIdHex } from '../../trust/minisign.js';
import { EXIT, random, UsageError, type CliIo } from '../io.js';
import { readPassword } from '../password.js';

export const KEYGEN_USAGE = 'keystonectl keygen --out PREFIX [--password-file FILE | --no-password] [--force]';

export async function keygen(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      'password-file': { type: 'string' },
      'no-password': { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (!values.out) throw new UsageError('--out PREFIX is required');
  const secretPath = resolve(io.cwd, `${values.out}.key`);
  const publicPath = resolve(io.cwd, `${values.out}.pub`);
  for (const p of [secretPath, publicPath])
    if (existsSync(p) && !values.force) throw new UsageError(`${p} exists; pass --force to overwrite it`);
  if (!existsSync(dirname(secretPath)))
    throw new UsageError(`the directory of --out ${values.out} does not exist: create ${dirname(secretPath)} first`);
  let password: Uint8Array | undefined;
  if (!values['no-password']) {
    password = await readPassword(io, {
      ...(values['password-file'] !== undefined && { file: values['password-file'] }),
      confirm: true,
      purpose: 'the new secret key',
    });
    if (password === undefined)
      throw new UsageError(
        'no password: give --password-file FILE or KEYSTONE_KEY_PASSWORD, run on a terminal to be asked, or pass --no-password',
      );
    if (password.length === 0) password = undefined;
  }
  const key = generateKey(random(io));
  const secretText = await formatSecretKey(key, password, random(io));
  // The secret key is created 0600 from the first byte: never world-readable, not even briefly. A mode
  // only applies when a file is created, so --force removes the old files rather than writing over them.
  if (values.force) for (const p of [secretPath, publicPath]) rmSync(p, { force: true });
  writeFileSync(secretPath, secretText, { mode: 0o600, flag: 'wx' });
  writeFileSync(publicPath, formatPublicKey(key), { mode: 0o644, flag: 'wx' });
  const id = keyIdHex(key.keyId);
  if (values.json)
    io.stdout.write(
      JSON.stringify({ keyId: id, secretKey: secretPath, publicKey: publicPath, encrypted: password !== undefined }) +
        '\n',
    );
  else
    io.stdout.write(
      `key ${id}${password ? ' (password-protected)' : ' (not password-protected)'}\n  secret key: ${secretPath}\n  public key: ${publicPath}\n` +
        `Devices trust it as a release key with: keystone agent … --trusted-key ${publicPath}\n` +
        `  or, made for enrolment, as the enrolment key with: --enrollment-key ${publicPath} (one role per key, never both)\n`,
    );
  return EXIT.OK;
}
