// The device's clock against the newest signature it applied (SPEC §6): a clock behind it is wrong (the signature
// was made before it was applied), and the agent judges every new signature's age and "from the future" by it.
import { isCommitId } from '../git/commit-id.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import type { AppliedState } from './applied-state.js';
import { isoTime } from '../core/iso-time.js';

const iso = (s: number) => isoTime(s * 1000);

export function checkClock(applied: AppliedState, nowMs: number, stateDir: string): CheckResult {
  if (applied.kind === 'none')
    return skip('clock', `nothing applied yet (no state database in ${stateDir}): no signing time to compare with`);
  if (applied.kind === 'unreadable')
    return fail(
      'clock',
      `cannot read ${applied.file}: ${applied.message}`,
      `check the file (keystone floor --state-dir ${stateDir} reads it too); move it aside only to start from empty state`,
      applied.code,
    );
  const rev = applied.revision;
  // The replay floor is the greatest signing time ever applied, the applied revision's own or an earlier one's.
  const signedAt = Math.max(rev?.signedAt ?? 0, applied.floor ?? 0);
  if (signedAt === 0)
    return skip(
      'clock',
      rev
        ? `the revision applied last (${short(rev.id)}) is unsigned: no signing time to compare with`
        : 'nothing signed applied yet: no signing time to compare with',
    );
  const now = Math.floor(nowMs / 1000);
  const which =
    rev?.signedAt === signedAt
      ? `the signature of the revision applied last (${short(rev.id)})`
      : 'the newest signature this device applied (its replay floor)';
  if (now >= signedAt) return pass('clock', `${iso(now)}, not earlier than ${which}, signed at ${iso(signedAt)}`);
  return fail(
    'clock',
    `this device's clock says ${iso(now)}, ${describeGap(signedAt - now)} earlier than ${which}, signed at ${iso(signedAt)}`,
    `set the clock (timedatectl set-ntp true, or date -s); if the clock is right, a signature dated in the future raised the floor: keystone floor --state-dir ${stateDir} --reset`,
  );
}

const short = (id: string) => (isCommitId(id) ? id.slice(0, 12) : id);

function describeGap(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}
