// `keystonectl sign --key FILE`: SHA256SUMS over every recipe and plan, fleet.toml, devices/revoked.toml and the files
// of secrets/, and its minisign signature with the signing time.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DirectoryReader, listDocuments } from '../../source/directory-reader.js';
import { MAX_DOCUMENT_BYTES } from '../../source/repo-reader.js';
import {
  formatSignature,
  keyIdHex,
  parseSecretKey,
  parseSignatures,
  sign as signMessage,
  signedRef,
} from '../../trust/minisign.js';
import { fullBranchRef } from '../../git/git-repo-location.js';
import { formatSha256Sums, sha256Hex } from '../../trust/sha256sums.js';
import { SIG_FILE, SUMS_FILE } from '../../trust/verify-revision.js';
import { OperationError } from '../../core/errors.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { keyPassword } from '../password.js';
import { repoRoot } from '../repository-args.js';
import { isoTime } from '../../core/iso-time.js';

export const SIGN_USAGE =
  'keystonectl sign --key FILE [--ref BRANCH] [--repo DIR] [--password-file FILE] [--append] [--legacy]';

export async function sign(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: 'string' },
      ref: { type: 'string' },
      repo: { type: 'string' },
      'password-file': { type: 'string' },
      append: { type: 'boolean', default: false },
      legacy: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (!values.key) throw new UsageError('--key FILE is required');
  const root = repoRoot(io.cwd, values.repo);
  // The ref the set is meant for, in the signed trusted comment: a device following another ref refuses it (SPEC §6).
  if (values.ref !== undefined && !/^(refs\/)?[A-Za-z0-9._][A-Za-z0-9._/-]*$/.test(values.ref))
    throw new UsageError(`--ref must be a branch name such as main, not "${values.ref}"`);
  const ref = values.ref === undefined ? undefined : fullBranchRef(values.ref);
  if (ref !== undefined && (ref.includes('..') || ref.endsWith('/') || ref.endsWith('.lock')))
    throw new UsageError(`--ref must be a branch name such as main, not "${values.ref}"`);

  // 1. The key first: a wrong password must not leave a half-written SHA256SUMS behind.
  const keyText = readFileSync(resolve(io.cwd, values.key), 'utf8');
  const password = await keyPassword(io, keyText, values.key, values['password-file']);
  const key = await parseSecretKey(keyText, password);

  // 2. SHA256SUMS over every signed document (listDocuments), read through the same safe reader the loader uses.
  const reader = new DirectoryReader(root);
  const sums = new Map<string, string>();
  for (const path of await listDocuments(root)) {
    const r = await reader.readFile(path, MAX_DOCUMENT_BYTES);
    if (!r.ok) throw new OperationError(r.code, `cannot sign ${path}: ${r.message}`);
    sums.set(path, sha256Hex(r.bytes));
  }
  if (sums.size === 0) throw new UsageError(`${root} has no recipes/*.toml or plans/*.toml to sign`);
  const sumsText = formatSha256Sums(sums);
  const sumsPath = join(root, SUMS_FILE);
  const sigPath = join(root, SIG_FILE);

  // 3. --append adds this signer beside the others (k of n), which is only sound over the very same SHA256SUMS.
  let others = '';
  if (values.append && existsSync(sigPath)) {
    if (!existsSync(sumsPath) || readFileSync(sumsPath, 'utf8') !== sumsText)
      throw new OperationError(
        'KS_SUMS_CHANGED',
        `${SUMS_FILE} changed since the others signed: sign without --append, and have them sign again`,
      );
    const kept = parseSignatures(readFileSync(sigPath, 'utf8')).filter(
      (s) => keyIdHex(s.keyId) !== keyIdHex(key.keyId),
    );
    // k of n signatures count only for one ref: a signer bound elsewhere would not add up on any device.
    const theirs = new Set(kept.map((s) => signedRef(s.trustedComment) ?? 'no ref'));
    const mine = ref ?? 'no ref';
    if ([...theirs].some((r) => r !== mine))
      throw new UsageError(
        `the others signed for ${[...theirs].join(', ')}: sign --append with the same ${mine === 'no ref' ? '--ref' : 'ref'} (${[...theirs][0]})`,
      );
    others = kept.map(formatSignature).join('');
  }
  const seconds = Math.floor(nowMs(io) / 1000);
  const algorithm = values.legacy ? 'legacy' : 'prehashed';
  const trusted = `timestamp:${seconds}\tfile:${SUMS_FILE}${algorithm === 'prehashed' ? '\thashed' : ''}${ref !== undefined ? `\tref=${ref}` : ''}`;
  const signature = signMessage(new TextEncoder().encode(sumsText), key, trusted, algorithm);
  writeFileSync(sumsPath, sumsText);
  writeFileSync(sigPath, others + formatSignature(signature));
  const id = keyIdHex(key.keyId);
  if (values.json)
    io.stdout.write(
      JSON.stringify({ keyId: id, signedAt: seconds, files: [...sums.keys()], algorithm, ref: ref ?? null }) + '\n',
    );
  else {
    io.stdout.write(
      `signed ${sums.size} files with key ${id} at ${isoTime(seconds * 1000)}${ref !== undefined ? ` for ${ref}` : ''}\n  ${sumsPath}\n  ${sigPath}\n`,
    );
    if (ref === undefined)
      io.stderr.write(
        'note: not bound to a ref, so whoever can push may put this set on any branch a device follows: sign with --ref main (docs/signing.md)\n',
      );
  }
  return EXIT.OK;
}
