// A selector wave admits a device by its labels (SPEC §14), which a device states itself. An enrolled device's report
// counts in such a wave only when its certificate vouches for the labels the wave selects, or the wave names the
// device (issue 29 review: an enrolled device of the last wave pushed its own, validly signed success under the
// canary's selector wave, and the next wave opened).
import type { Rollout } from '../core/rollout.js';
import type { Verification } from './report-verifier.js';
/**
 * A verified report in a wave that selects by labels, of a device the wave does not name: counted only when the
 * device's certificate vouches for every label the wave selects (an enrolled device's unverified report never counts).
 */
export function vouched(
  rollout: Pick<Rollout, 'waves'>,
  r: { wave: string; device: string },
  v: Verification,
): Verification {
  if (v.verdict !== 'verified') return v;
  const wave = rollout.waves.find((w) => w.name === r.wave);
  if (!wave?.selector || wave.devices?.includes(r.device)) return v;
  const labels = v.labels ?? {};
  const missing = Object.entries(wave.selector).filter(([k, val]) => labels[k] !== val);
  if (missing.length === 0) return v;
  const want = missing.map(([k, val]) => `${k}=${val}`).join(', ');
  return {
    ...v,
    verdict: 'unverified',
    reason: `${r.device}'s certificate does not vouch for ${want}, which wave ${r.wave} selects (enrol it with --label ${missing[0]![0]}=${missing[0]![1]})`,
  };
}
