// Ownership by label for processes: find what carries this agent's KEYSTONE_OWNER mark but is not in its records.
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { listProcesses } from '../runtime/proc-identity.js';
import { killGroup } from '../runtime/process-group.js';
import { COMPONENT_ENV, OWNER_ENV } from '../runtime/process-runtime.js';

/** One agent's mark: derived from its state directory, so two agents on one device never claim each other's processes. */
export function ownerTag(stateDir: string): string {
  let real = stateDir;
  try {
    real = realpathSync(stateDir);
  } catch {
    /* not created yet: the path itself */
  }
  return `ks-${createHash('sha256').update(real).digest('hex').slice(0, 16)}`;
}

export interface OwnedProcess {
  pid: number;
  startTime: string;
  pgrp: number;
  component: string;
}

/** Every live process whose environment carries `tag` (readable for the agent's own user, or all as root). */
export function findOwnedProcesses(tag: string): OwnedProcess[] {
  const out: OwnedProcess[] = [];
  const needle = `${OWNER_ENV}=${tag}`;
  for (const p of listProcesses()) {
    if (p.state === 'Z' || p.pid === process.pid) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${p.pid}/environ`, 'latin1');
    } catch {
      continue;
    }
    const vars = env.split('\0');
    if (!vars.includes(needle)) continue;
    const component = vars.find((v) => v.startsWith(`${COMPONENT_ENV}=`))?.slice(COMPONENT_ENV.length + 1) ?? '?';
    out.push({ pid: p.pid, startTime: p.startTime, pgrp: p.pgrp, component });
  }
  return out;
}

/**
 * Kills the process groups of marked processes that no record accounts for: what an agent killed
 * between spawning a component and recording its pid left behind. Returns what it removed.
 */
export async function sweepOrphans(
  tag: string,
  recorded: ReadonlyArray<{ pid: number; startTime: string }>,
): Promise<OwnedProcess[]> {
  const known = new Set(recorded.map((r) => `${r.pid}:${r.startTime}`));
  const knownGroups = new Set(recorded.map((r) => r.pid));
  const orphans = findOwnedProcesses(tag).filter(
    (p) => !known.has(`${p.pid}:${p.startTime}`) && !knownGroups.has(p.pgrp),
  );
  for (const o of orphans) {
    if (o.pid === o.pgrp) await killGroup(o.pid, o.startTime);
    else if (!orphans.some((x) => x.pid === o.pgrp)) {
      try {
        process.kill(o.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  return orphans;
}
