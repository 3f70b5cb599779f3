// What `keystonectl apply` sends: every file the agent needs to verify and apply the plan by itself — the signed set
// (all of SHA256SUMS, since the agent checks every listed file), the signature, and the artifacts the recipes name by a
// path inside the repository (they are pinned by digest, so the agent checks those too).
import type { DesiredState } from '../core/desired-state.js';
import { OperationError } from '../core/errors.js';
import { resolveArtifactSource } from '../artifacts/artifact-source.js';
import { MAX_DOCUMENT_BYTES, type RepoReader } from '../source/repo-reader.js';
import { SIG_FILE, SUMS_FILE } from '../trust/verify-revision.js';
import type { Verification } from './trust-args.js';

/** The raw bytes must fit the agent's body limit (48 MiB of base64): larger artifacts belong on an https server. */
export const MAX_PAYLOAD_BYTES = 32 * 1024 * 1024;

export async function collectApplyFiles(
  reader: RepoReader,
  plan: string,
  desired: DesiredState,
  verification: Verification,
): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  let total = 0;
  const add = async (path: string, required: boolean, max = MAX_DOCUMENT_BYTES) => {
    if (files.has(path)) return;
    const r = await reader.readFile(path, max);
    if (!r.ok) {
      if (!required && r.code === 'KS_FILE_NOT_FOUND') return;
      throw new OperationError('KS_APPLY_FILE_UNREADABLE', `${path}: ${r.message}`);
    }
    total += r.bytes.length;
    if (total > MAX_PAYLOAD_BYTES)
      throw new OperationError(
        'KS_APPLY_TOO_LARGE',
        `the files of this apply pass ${MAX_PAYLOAD_BYTES / 1024 / 1024} MiB at ${path}: serve large artifacts over https, or deploy through Git`,
      );
    files.set(path, r.bytes);
  };
  await add(plan, true);
  for (const c of desired.components) await add(c.recipePath, true);
  // A composite's own recipe names its members; a group scaled to zero has no unit to bring its recipe along.
  for (const g of desired.groups ?? []) await add(g.recipePath, true);
  if (!verification.unsigned) for (const f of verification.files) await add(f, true);
  // Sent even when unsigned here: the agent may hold keys the sender did not use, and decides for itself.
  await add(SUMS_FILE, !verification.unsigned, 16 * 1024 * 1024);
  await add(SIG_FILE, !verification.unsigned, 64 * 1024);
  for (const c of desired.components)
    for (const a of c.recipe.artifacts) {
      const source = resolveArtifactSource(a.uri, c.recipePath);
      if (source.kind === 'repository') await add(source.path, true, MAX_PAYLOAD_BYTES);
    }
  return files;
}
