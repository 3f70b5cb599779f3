// `keystonectl enroll`: the operator vouches for a device (SPEC §15). It reads what `keystone identity --json`
// printed on the device (its name and public keys: nothing secret ever leaves a device), signs a certificate with
// the enrolment key and writes it to devices/NAME.cert for the repository. `--check` verifies one the way devices
// and `fleet status` do, so an operator can tell what a reader will make of it before committing.
//
// Revoking is not a command: add an entry to devices/revoked.toml and sign the repository again (docs/fleets.md),
// so that a revocation is reviewed and signed like every other change of the fleet.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDuration } from '../../core/duration.js';
import { formatLabels, labelsFromArgs } from '../../core/labels.js';
import { certificatePath, verifyCertificate, type DeviceCertificate } from '../../identity/certificate.js';
import { signCertificate } from '../../identity/sign-certificate.js';
import { IdentityError } from '../../identity/identity-error.js';
import { reportKeyId } from '../../identity/report-signature.js';
import { NO_REVOCATIONS, parseRevocations, revokedReason, RevocationsError } from '../../identity/revocations.js';
import { parsePublicKey, parseSecretKey } from '../../trust/minisign.js';
import { TrustError } from '../../trust/trust-error.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { keyPassword } from '../password.js';
import { parseIdentity } from './parse-identity.js';
import { isoTime } from '../../core/iso-time.js';

export const ENROLL_USAGE =
  'keystonectl enroll --key ENROLL.key --identity FILE|- [--label K=V …] [--out devices/NAME.cert] [--expires DURATION|DATE] [--password-file FILE] [--force] [--json]\n' +
  '      keystonectl enroll --check FILE --enrollment-key PUB [--enrollment-key PUB…] [--device NAME] [--revoked devices/revoked.toml] [--json]';

/** `keystone identity --json` is a few hundred bytes; anything much larger is not one. */
const MAX_IDENTITY_BYTES = 64 * 1024;
const DAY_MS = 86_400_000;

export async function enroll(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: 'string' },
      identity: { type: 'string' },
      label: { type: 'string', multiple: true },
      out: { type: 'string' },
      expires: { type: 'string' },
      'password-file': { type: 'string' },
      force: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      check: { type: 'string' },
      'enrollment-key': { type: 'string', multiple: true },
      device: { type: 'string' },
      revoked: { type: 'string' },
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  try {
    return values.check !== undefined ? check(values.check, values, io) : await write(values, io);
  } catch (e) {
    // A certificate, an identity or a revocation list refused: which file, which check (exit 2, SPEC §9).
    if (!(e instanceof IdentityError)) throw e;
    if (values.json)
      io.stdout.write(
        JSON.stringify(
          {
            error: {
              code: e.code,
              message: e.message,
              file: e.file ?? null,
              ...(e instanceof RevocationsError && { diagnostics: e.diagnostics }),
            },
          },
          null,
          2,
        ) + '\n',
      );
    io.stderr.write(`keystonectl enroll: refused: ${e.message} [${e.code}]\n`);
    return EXIT.BAD_INPUT;
  }
}

interface EnrollValues {
  key?: string;
  identity?: string;
  label?: string[];
  out?: string;
  expires?: string;
  'password-file'?: string;
  force?: boolean;
  json?: boolean;
  check?: string;
  'enrollment-key'?: string[];
  device?: string;
  revoked?: string;
}

async function write(values: EnrollValues, io: CliIo): Promise<number> {
  for (const flag of ['enrollment-key', 'device', 'revoked'] as const)
    if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with --check`);
  if (!values.key) throw new UsageError('--key ENROLL.key is required (make one with keystonectl keygen --out enroll)');
  if (!values.identity)
    throw new UsageError(
      '--identity FILE is required: what `keystone identity --json` printed on the device (- reads it from stdin)',
    );

  // 1. Everything about the device first: a malformed identity must not cost a password prompt.
  const source = values.identity === '-' ? 'stdin' : values.identity;
  const identity = parseIdentity(
    values.identity === '-' ? await readStdin(io) : readText(resolve(io.cwd, values.identity), '--identity'),
    source,
  );
  let labels: Record<string, string>;
  try {
    labels = { ...labelsFromArgs(values.label ?? []) };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const now = nowMs(io);
  const expiresAt = values.expires === undefined ? undefined : parseExpires(values.expires, now);
  const defaultOut = certificatePath(identity.device);
  if (values.out === undefined && defaultOut === undefined)
    throw new UsageError(`the device name ${JSON.stringify(identity.device)} cannot be a file name: give --out FILE`);
  const out = resolve(io.cwd, values.out ?? defaultOut!);
  if (existsSync(out) && !values.force)
    throw new UsageError(`${out} exists; pass --force to replace it (a new certificate for the same device)`);
  if (values.out !== undefined && !existsSync(dirname(out)))
    throw new UsageError(`the directory of --out ${values.out} does not exist: create ${dirname(out)} first`);

  // 2. The enrolment key, as `keystonectl sign` reads a signing key.
  const keyText = readText(resolve(io.cwd, values.key), '--key');
  const password = await keyPassword(io, keyText, values.key, values['password-file']);
  const key = await parseSecretKey(keyText, password);

  // 3. Sign and write: 0644, the certificate is public (it holds public keys only).
  const text = signCertificate(
    { ...identity, labels, issuedAt: now, ...(expiresAt !== undefined && { expiresAt }) },
    key,
  );
  const cert = verifyCertificate(text, { enrollmentKeys: [key], now, file: out });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, text, { mode: 0o644, flag: values.force ? 'w' : 'wx' });
  const shown = shownPath(io.cwd, out);
  const pub = values.key.replace(/\.key$/, '.pub');
  if (values.json) io.stdout.write(JSON.stringify({ ...summary(cert), out }) + '\n');
  else
    io.stdout.write(
      `enrolled ${cert.device}: report key ${reportKeyId(cert.reportKey.keyId)}, age recipient ${cert.ageRecipient}, ${formatLabels(cert.labels)}\n` +
        `  certificate: ${shown} (enrolment key ${cert.signer}, ${cert.expiresAt === undefined ? 'does not expire' : `expires ${iso(cert.expiresAt)}`})\n` +
        `next: commit ${shown}; it need not be in SHA256SUMS (a certificate authenticates itself). ` +
        `Agents and keystonectl check it with --enrollment-key ${pub !== values.key && existsSync(resolve(io.cwd, pub)) ? pub : 'ENROLL.pub'}\n`,
    );
  return EXIT.OK;
}

function check(file: string, values: EnrollValues, io: CliIo): number {
  for (const flag of ['key', 'identity', 'label', 'out', 'expires', 'password-file'] as const)
    if (values[flag] !== undefined) throw new UsageError(`--${flag} does not go with --check`);
  if (values.force) throw new UsageError('--force does not go with --check');
  const keyFiles = values['enrollment-key'] ?? [];
  if (!keyFiles.length)
    throw new UsageError('--check needs --enrollment-key PUB (the public half of the enrolment key)');
  const enrollmentKeys = keyFiles.map((f) => {
    try {
      return parsePublicKey(readText(resolve(io.cwd, f), '--enrollment-key'));
    } catch (e) {
      if (e instanceof TrustError) throw new TrustError(e.code, `${f}: ${e.message}`, f, e.keyId);
      throw e;
    }
  });
  const revocations =
    values.revoked === undefined
      ? NO_REVOCATIONS
      : parseRevocations(readText(resolve(io.cwd, values.revoked), '--revoked'), values.revoked);
  const cert = verifyCertificate(readText(resolve(io.cwd, file), '--check'), {
    enrollmentKeys,
    now: nowMs(io),
    file,
    ...(values.device !== undefined && { device: values.device }),
    revoked: (c) => revokedReason(revocations, c),
  });
  if (values.json) io.stdout.write(JSON.stringify({ ok: true, file, ...summary(cert) }) + '\n');
  else
    io.stdout.write(
      `${file}: a valid certificate of ${cert.device}\n` +
        `  report key     ${reportKeyId(cert.reportKey.keyId)} ${cert.reportKeyText}\n` +
        `  age recipient  ${cert.ageRecipient}\n` +
        `  labels         ${formatLabels(cert.labels)}\n` +
        `  issued         ${iso(cert.issuedAt)} with enrolment key ${cert.signer}\n` +
        `  expires        ${cert.expiresAt === undefined ? 'never' : iso(cert.expiresAt)}\n`,
    );
  return EXIT.OK;
}

function summary(cert: DeviceCertificate) {
  return {
    device: cert.device,
    reportKeyId: reportKeyId(cert.reportKey.keyId),
    reportKey: cert.reportKeyText,
    ageRecipient: cert.ageRecipient,
    labels: cert.labels,
    issued: iso(cert.issuedAt),
    expires: cert.expiresAt === undefined ? null : iso(cert.expiresAt),
    signer: cert.signer,
  };
}

const iso = (ms: number) => isoTime(ms).replace(/\.000Z$/, 'Z');

/** `--expires`: a duration from now (`8760h`, `365d`) or a date (`2027-12-04`, `2027-12-04T10:00:00Z`). */
function parseExpires(text: string, now: number): number {
  let at: number | undefined;
  const days = /^(\d{1,5})d$/.exec(text);
  if (days) at = now + Number(days[1]) * DAY_MS;
  else if (/^\d{4}-\d{2}-\d{2}$/.test(text)) at = Date.parse(`${text}T00:00:00Z`);
  else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) at = Date.parse(text);
  else {
    const ms = parseDuration(text);
    if (ms !== undefined && ms > 0) at = now + ms;
  }
  if (at === undefined || Number.isNaN(at))
    throw new UsageError(
      `--expires takes a duration (365d, 8760h) or a date (2027-12-04, 2027-12-04T10:00:00Z), not ${JSON.stringify(text)}`,
    );
  if (at <= now + 1000) throw new UsageError(`--expires ${text} is not in the future`);
  return at;
}

function readText(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${flag} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** The identity piped in (`keystone identity --json | ssh … | keystonectl enroll --identity -`), bounded. */
async function readStdin(io: CliIo): Promise<string> {
  const stdin = io.stdin ?? process.stdin;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > MAX_IDENTITY_BYTES)
      throw new IdentityError(
        'KS_IDENTITY_MALFORMED',
        `stdin: more than ${MAX_IDENTITY_BYTES} bytes: not a device identity`,
        'stdin',
      );
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** devices/gw-1.cert when it is under the working directory (what to `git add`), else the absolute path. */
function shownPath(cwd: string, path: string): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}
