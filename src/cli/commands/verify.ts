// `keystonectl verify --trusted-key FILE`: the repository's signature, every listed digest, and nothing unsigned beside them.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fetchArtifact } from '../../artifacts/fetch-artifact.js';
import { InvalidRevisionError } from '../../core/errors.js';
import { parseRecipe } from '../../core/recipe.js';
import { MAX_DOCUMENT_BYTES } from '../../source/repo-reader.js';
import { progressBar } from '../render/progress-bar.js';
import { DirectoryReader, listDocuments } from '../../source/directory-reader.js';
import { TrustError } from '../../trust/trust-error.js';
import { SUMS_FILE } from '../../trust/verify-revision.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { fullBranchRef } from '../../git/git-repo-location.js';
import { repoRoot } from '../repository-args.js';
import { describeVerification, TRUST_OPTIONS, TRUST_USAGE, trustPolicy } from '../trust-args.js';

/** 2 GiB: artifacts are programs and images, not datasets. */
const MAX_ARTIFACT_BYTES = 2 * 1024 ** 3;

export const VERIFY_USAGE = `keystonectl verify [--repo DIR] [--ref BRANCH] ${TRUST_USAGE} [--artifacts [--cache DIR]] [--json]`;

export async function verify(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      repo: { type: 'string' },
      ref: { type: 'string' },
      json: { type: 'boolean', default: false },
      artifacts: { type: 'boolean', default: false },
      cache: { type: 'string' },
      ...TRUST_OPTIONS,
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values['allow-unsigned']) throw new UsageError('verify checks signatures: --allow-unsigned makes no sense here');
  const root = repoRoot(io.cwd, values.repo);
  const raw = new DirectoryReader(root);
  const { verification, reader } = await trustPolicy(
    values,
    io,
    values.ref === undefined ? undefined : fullBranchRef(values.ref),
  ).open(raw);
  if (verification.unsigned) throw new UsageError('verify needs --trusted-key');
  const v = verification;
  // A recipe or plan that is present but not listed would be refused the moment a plan used it: say so now.
  const listed = new Set(v.files);
  const unlisted = (await listDocuments(root)).filter((p) => !listed.has(p));
  if (unlisted.length)
    throw new TrustError(
      'KS_FILE_NOT_SIGNED',
      `${unlisted.join(', ')} ${unlisted.length === 1 ? 'is' : 'are'} not listed in ${SUMS_FILE}: re-sign the repository`,
      unlisted[0],
    );
  // --artifacts: fetch every artifact of every signed recipe through the cache and check its digest.
  const artifacts: Array<{ recipe: string; uri: string; sha256: string; cached: boolean; bytes: number }> = [];
  if (values.artifacts) {
    const cacheDir = resolve(
      io.cwd,
      values.cache ?? join(io.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'keystone'),
    );
    for (const file of v.files.filter((f) => f.startsWith('recipes/'))) {
      const read = await reader.readFile(file, MAX_DOCUMENT_BYTES);
      if (!read.ok) continue;
      const parsed = parseRecipe(file, new TextDecoder().decode(read.bytes));
      if (!parsed.recipe) throw new InvalidRevisionError(parsed.diagnostics);
      for (const a of parsed.recipe.artifacts) {
        const bar = progressBar(io, `${file}: ${a.uri}`);
        // Relative artifacts are pinned by their digest, not listed in SHA256SUMS: read them from the plain directory.
        const got = await fetchArtifact({
          uri: a.uri,
          sha256: a.sha256,
          recipeFile: file,
          reader: raw,
          cacheDir,
          maxBytes: MAX_ARTIFACT_BYTES,
          onProgress: bar.update,
        });
        bar.done();
        artifacts.push({ recipe: file, uri: a.uri, sha256: a.sha256, cached: got.cached, bytes: got.bytes });
      }
    }
  }
  if (values.json) io.stdout.write(JSON.stringify({ ok: true, ...v, ...(values.artifacts && { artifacts }) }) + '\n');
  else {
    io.stdout.write(`OK: ${SUMS_FILE} ${describeVerification(v)}; ${listed.size} files match their digests\n`);
    for (const a of artifacts)
      io.stdout.write(
        `OK: ${a.recipe}: ${a.uri} (${a.bytes} bytes${a.cached ? ', cached' : ''}) matches sha256 ${a.sha256.slice(0, 12)}…\n`,
      );
  }
  return EXIT.OK;
}
