// Signed fleet repositories for the agent-update tests: an agent update is followed only from a signed revision
// (SPEC §17; KS_AGENT_UNSIGNED under --allow-unsigned). A throwaway key made by keystonectl keygen, each repository
// signed by keystonectl sign (both in-process), at signing times a second apart and a day in the past, so that a
// newer commit is never below the replay floor an older one raised.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TrustSetting } from '../../src/agent/agent-types.js';
import { buildKeyring } from '../../src/trust/keyring.js';
import { runCtl } from '../support/cli-run.js';

let clock = Math.floor(Date.now() / 1000) - 86_400;

export interface Signer {
  /** What the device trusts: this key only. */
  trust: TrustSetting;
  /** Writes SHA256SUMS and its signature into the repository at `dir`. */
  sign(dir: string): Promise<void>;
  cleanup(): void;
}

export async function signer(): Promise<Signer> {
  const keyDir = mkdtempSync(join(tmpdir(), 'ks-update-key-'));
  const prefix = join(keyDir, 'release');
  const must = async (args: string[], cwd: string) => {
    const r = await runCtl(args, cwd, { now: () => ++clock * 1000 });
    if (r.code !== 0) throw new Error(`keystonectl ${args.join(' ')}: ${r.stderr}`);
  };
  await must(['keygen', '--out', prefix, '--no-password'], keyDir);
  const keyring = buildKeyring([{ source: `${prefix}.pub`, text: readFileSync(`${prefix}.pub`, 'utf8') }]);
  return {
    trust: { unsigned: false, keyring },
    sign: (dir) => must(['sign', '--key', `${prefix}.key`], dir),
    cleanup: () => rmSync(keyDir, { recursive: true, force: true }),
  };
}
