// Free space where the agent writes: artifact downloads and their unpacking, component logs, the state database.
// A full disk shows up later as failed installs and a store that cannot record what it did.
import { existsSync } from 'node:fs';
import { fail, pass, type CheckResult } from './check-result.js';
import type { DoctorFacts } from './doctor-facts.js';
import { nearestExisting } from './state-dir-check.js';

export async function checkDiskSpace(
  stateDir: string,
  facts: Pick<DoctorFacts, 'statfs' | 'minFreeBytes'>,
): Promise<CheckResult> {
  // A state directory still to be created lives on its nearest existing parent's file system.
  const at = existsSync(stateDir) ? stateDir : nearestExisting(stateDir);
  let free: number;
  try {
    const s = await facts.statfs(at);
    free = s.bavail * s.bsize;
  } catch (e) {
    return fail(
      'disk-space',
      `cannot read the free space of ${at}: ${(e as Error).message}`,
      'check that the state directory is on a mounted, readable file system',
    );
  }
  const where = at === stateDir ? stateDir : `${stateDir} (on the file system of ${at})`;
  if (free >= facts.minFreeBytes) return pass('disk-space', `${formatBytes(free)} free for ${where}`);
  return fail(
    'disk-space',
    `only ${formatBytes(free)} free for ${where}, under ${formatBytes(facts.minFreeBytes)}`,
    `free space on that file system (old logs under ${stateDir}/components/*/logs, the artifact cache ${stateDir}/cache), or give --state-dir a larger one`,
  );
}

/** `1.5 GiB`, `312.0 MiB`, `900 KiB`: binary units, one decimal from MiB up. */
export function formatBytes(n: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  if (n < 1024) return `${n} B`;
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} ${units[0]}` : `${v.toFixed(1)} ${units[i]}`;
}
