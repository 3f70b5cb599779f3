// What the doctor tests share: the machine's facts with a few set on cue, a setup like the CLI builds, and a state
// directory where a root agent would put one (its parent searchable by every run user).
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliIo } from '../../src/cli/io.js';
import { trustSetting, type TrustValues } from '../../src/cli/trust-args.js';
import { systemFacts, type DoctorFacts } from '../../src/doctor/doctor-facts.js';
import type { DoctorSetup } from '../../src/doctor/doctor-setup.js';
import { openStateStore } from '../../src/store/state-store.js';
import type { AppliedRevision } from '../../src/store/state-store.js';

export function facts(overrides: Partial<DoctorFacts> = {}): DoctorFacts {
  return { ...systemFacts({ env: process.env, now: Date.now }), ...overrides };
}

export function setup(overrides: Partial<DoctorSetup> & Pick<DoctorSetup, 'stateDir'>): DoctorSetup {
  return {
    settings: { ok: true },
    source: { kind: 'none', problem: 'no source given' },
    device: 'doctor-test',
    labels: {},
    trust: { unsigned: true, keyFiles: [] },
    allowRoot: false,
    ...overrides,
  };
}

/**
 * A device that trusts `keyFiles` (and the other trust flags), as the CLI hands it to the checks: the files for the
 * trusted-keys check, the keyring and limits the first-revision check verifies with (the same flags' reading).
 */
export function trusting(
  keyFiles: string[],
  more: Omit<TrustValues, 'trusted-key' | 'allow-unsigned'> = {},
): Pick<DoctorSetup, 'trust' | 'verification'> {
  const io = { cwd: '/', env: {} } as unknown as CliIo;
  const verification = trustSetting({ 'trusted-key': keyFiles, ...more }, io);
  if (verification.unsigned) throw new Error('a keyring was asked for');
  return {
    trust: { unsigned: false, keyFiles, ...(more.threshold !== undefined && { threshold: more.threshold }) },
    verification,
  };
}

export interface Scratch {
  /** A fresh directory, mode 0755 (mkdtemp's 0700 would stop every run user on its way). */
  dir: string;
  /** `<dir>/state`, not created. */
  stateDir: string;
  cleanup(): void;
}

export function scratch(prefix = 'keystone-doctor-'): Scratch {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return { dir, stateDir: join(dir, 'state'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A state directory as the agent leaves it (0711), with `revision` recorded as applied; the store is closed. */
export function stateWithApplied(stateDir: string, revision?: Partial<AppliedRevision>): void {
  mkdirSync(stateDir, { mode: 0o711 });
  chmodSync(stateDir, 0o711);
  const store = openStateStore(stateDir);
  try {
    if (revision)
      store.setAppliedRevision({
        id: 'dir:0123456789ab',
        source: 'test',
        planFile: 'plans/test.toml',
        unsigned: false,
        signedAt: 1_700_000_000,
        appliedAt: Date.now(),
        ...revision,
      });
  } finally {
    store.close();
  }
}

/** Every entry under `dir` with its mode, owner, size and modification time: what "changed nothing" compares. */
export function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p);
      out.push(`${p} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.isDirectory() ? '-' : st.size} ${st.mtimeMs}`);
      if (st.isDirectory()) walk(p);
    }
  };
  const st = lstatSync(dir);
  out.push(`${dir} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.mtimeMs}`);
  walk(dir);
  return out;
}
