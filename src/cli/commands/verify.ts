// `keystonectl verify --trusted-key FILE`: the repository's signature, every listed digest, and nothing unsigned beside them.
import { parseArgs } from 'node:util';
import { DirectoryReader, listDocuments } from '../../source/directory-reader.js';
import { TrustError } from '../../trust/trust-error.js';
import { SUMS_FILE } from '../../trust/verify-revision.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';
import { describeVerification, TRUST_OPTIONS, TRUST_USAGE, trustPolicy } from '../trust-args.js';

export const VERIFY_USAGE = `keystonectl verify [--repo DIR] ${TRUST_USAGE} [--json]`;

export async function verify(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { repo: { type: 'string' }, json: { type: 'boolean', default: false }, ...TRUST_OPTIONS },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values['allow-unsigned']) throw new UsageError('verify checks signatures: --allow-unsigned makes no sense here');
  const root = repoRoot(io.cwd, values.repo);
  const { verification } = await trustPolicy(values, io).open(new DirectoryReader(root));
  if (verification.unsigned) throw new UsageError('verify needs --trusted-key');
  const v = verification;
  // A recipe or plan that is present but not listed would be refused the moment a plan used it: say so now.
  const listed = new Set(v.files);
  const unlisted = (await listDocuments(root)).filter((p) => !listed.has(p));
  if (unlisted.length) throw new TrustError('KS_FILE_NOT_SIGNED', `${unlisted.join(', ')} ${unlisted.length === 1 ? 'is' : 'are'} not listed in ${SUMS_FILE}: re-sign the repository`, unlisted[0]);
  if (values.json) io.stdout.write(JSON.stringify({ ok: true, ...v }) + '\n');
  else io.stdout.write(`OK: ${SUMS_FILE} ${describeVerification(v)}; ${listed.size} files match their digests\n`);
  return EXIT.OK;
}
