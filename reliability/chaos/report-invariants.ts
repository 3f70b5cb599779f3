// SPEC §8 and §15 under kills: "a device can write its own reports only", which holds only if the device keeps one
// identity and signs everything it reports with it.
//
//   reports signed   Every rollout ref of the device on the server, and the device's entry in the note of every commit
//                    pushed since the last look, carries a signature that verifies against the device's report key
//                    (`<state-dir>/identity/report.pub`), and that key is the one the device had at the first settle:
//                    no kill -9, no restart mid-write makes a new identity or an unsigned report.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { noteMessage, reportKeyId, rolloutMessage } from '../../src/identity/report-signature.js';
import { statusContext } from '../../src/report/commit-status.js';
import { parseRolloutRef, ROLLOUT_PREFIX } from '../../src/report/rollout-refs.js';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { parsePublicKey, verifyEd25519 } from '../../src/trust/minisign.js';
import { GIT_ENV } from '../../test/support/git-env.js';
import { DEVICE, type ChaosAgent } from './chaos-agent.js';
import type { ChaosRepo, PushedCommit } from './chaos-repo.js';

const run = promisify(execFile);

export const REPORTS_SIGNED = 'reports signed';

/** The device's identity as first seen in the run. */
export interface IdentityLedger {
  keyId?: string;
}

export async function reportsSigned(
  repo: ChaosRepo,
  ca: ChaosAgent,
  commits: readonly PushedCommit[],
  ledger: IdentityLedger,
): Promise<{ name: typeof REPORTS_SIGNED; ok: boolean; detail?: string }> {
  const problems: string[] = [];
  const key = parsePublicKey(readFileSync(join(ca.h.stateDir, 'identity', 'report.pub'), 'utf8'));
  const keyId = reportKeyId(key.keyId);
  ledger.keyId ??= keyId;
  if (ledger.keyId !== keyId) problems.push(`the device's report key changed from ${ledger.keyId} to ${keyId}`);
  const { stdout } = await run(
    'git',
    ['--git-dir', repo.bare, 'for-each-ref', '--format=%(refname)', ROLLOUT_PREFIX.replace(/\/$/, '')],
    { env: GIT_ENV },
  );
  for (const name of stdout.split('\n').filter(Boolean)) {
    const r = parseRolloutRef(name);
    if (r?.device !== DEVICE) continue;
    if (r.signature?.keyId !== keyId || !verifyEd25519(rolloutMessage(r), r.signature.signature, key.publicKey))
      problems.push(`rollout ref ${name} is not signed by the device`);
  }
  for (const c of commits) {
    const entry = (await readStatusNotes(repo.bare, c.id)).find((l) => l.context === statusContext(DEVICE));
    if (!entry) continue; // "no status lost" says whether it should be there
    if (
      entry.signature?.keyId !== keyId ||
      !verifyEd25519(noteMessage(c.id, entry.signed), entry.signature.signature, key.publicKey)
    )
      problems.push(`the note on ${c.id.slice(0, 12)} is not signed by the device`);
  }
  return { name: REPORTS_SIGNED, ok: problems.length === 0, ...(problems.length && { detail: problems.join('; ') }) };
}
