// Step 2b of a revision (take-revision.ts): the secrets its plan reads, opened with this device's keys (SPEC §16). The
// values go into the agent's vault (memory only); the desired state gets their keyed digests, so that its hashes tell a
// new value (restart the readers) from a re-encryption (nothing to do). A secret that cannot be opened refuses the
// revision like an invalid one: nothing stopped or started, an `error` naming the secret and why.
import type { DesiredState } from '../core/desired-state.js';
import { FLEET_FILE, parseFleet, selectTarget } from '../core/fleet.js';
import type { Labels } from '../core/labels.js';
import { secretsRead, withSecretDigests } from '../core/secret-digests.js';
import type { SecretOpener } from '../secrets/open-secrets.js';
import { SecretError } from '../secrets/secret-error.js';
import type { SecretVault } from '../secrets/secret-vault.js';
import { MAX_DOCUMENT_BYTES, type RepoReader } from '../source/repo-reader.js';
import { TrustError } from '../trust/trust-error.js';

/** How this agent opens secrets: its own identity's opener, and the vault the runtimes read values from. */
export interface SecretSteps {
  opener: SecretOpener;
  vault: SecretVault;
}

export type OpenedRevision = { ok: true; state: DesiredState } | { ok: false; reason: string };

export async function openRevisionSecrets(
  reader: RepoReader,
  state: DesiredState,
  o: { target: string | undefined; device: string; labels: Labels; secrets: SecretSteps | undefined },
): Promise<OpenedRevision> {
  const names = secretsRead(state);
  if (names.length === 0) return { ok: true, state };
  if (!o.secrets)
    return {
      ok: false,
      reason: `KS_SECRET_UNAVAILABLE: the plan reads secret ${names.join(', ')}, and this agent has no device identity to open secrets with`,
    };
  try {
    // A device given its plan (--plan) reads the secrets of the fleet.toml target its name and labels fall in.
    const target = o.target ?? (await targetOf(reader, o.device, o.labels));
    const opened = await o.secrets.opener.open(reader, names, target);
    o.secrets.vault.keep(opened.values);
    return { ok: true, state: withSecretDigests(state, opened.digests) };
  } catch (e) {
    if (e instanceof SecretError) return { ok: false, reason: `${e.code}: ${e.message}` };
    // A secrets/ file the signature does not cover (set after signing, not re-signed): refused like any unsigned file.
    if (e instanceof TrustError) return { ok: false, reason: `${e.code}: secret ${names.join(', ')}: ${e.message}` };
    throw e;
  }
}

async function targetOf(reader: RepoReader, device: string, labels: Labels): Promise<string | undefined> {
  if (device === '') return undefined;
  const read = await reader.readFile(FLEET_FILE, MAX_DOCUMENT_BYTES);
  if (!read.ok) return undefined;
  const parsed = parseFleet(FLEET_FILE, new TextDecoder().decode(read.bytes));
  return parsed.fleet ? selectTarget(parsed.fleet, device, labels)?.target.name : undefined;
}
