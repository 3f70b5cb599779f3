// The rollout bench's options, its waves and [rollout] table, and the fleet's devices by wave.
import { parseArgs } from 'node:util';
import { parseDuration } from '../../dist/core/duration.js';
import { waveOf } from '../../dist/core/rollout.js';

export const { values: opts } = parseArgs({
  args: process.argv.slice(2),
  options: {
    devices: { type: 'string', default: '30' },
    poll: { type: 'string', default: '2s' },
    bake: { type: 'string', default: '5s' },
    'min-success': { type: 'string', default: '2' },
    abort: { type: 'string', default: '0' },
    'held-polls': { type: 'string', default: '3' },
    synthetic: { type: 'string', default: '1000,10000,100000' },
    'verify-readers': { type: 'string', default: 'dir,git' },
    'git-reader-up-to': { type: 'string', default: '10000' },
    fleets: { type: 'string', default: 'rollout,plain' },
  },
});
export const n = Number(opts.devices);
export const pollMs = parseDuration(opts.poll)!;
export const bakeMs = parseDuration(opts.bake)!;
export const minSuccess = Number(opts['min-success']);
export const abortPercent = Number(opts.abort);
export const heldPolls = Number(opts['held-polls']);
export const synthSizes =
  opts.synthetic === 'none' || opts.synthetic === '' ? [] : opts.synthetic.split(',').map((s) => Number(s.trim()));
export const fleets = opts.fleets === 'none' ? [] : opts.fleets.split(',').map((s) => s.trim());
export const verifyReaders =
  opts['verify-readers'] === 'none' ? [] : opts['verify-readers'].split(',').map((s) => s.trim());
export const gitReaderUpTo = Number(opts['git-reader-up-to']);
if (
  !Number.isInteger(n) ||
  n < 3 ||
  n > 500 ||
  !(pollMs >= 500) ||
  !(bakeMs >= 0) ||
  !(Number.isInteger(minSuccess) && minSuccess >= 1) ||
  !(abortPercent >= 0 && abortPercent <= 100) ||
  !(heldPolls >= 1) ||
  synthSizes.some((s) => !Number.isInteger(s) || s < 10 || s > 1_000_000) ||
  fleets.some((f) => !['rollout', 'plain'].includes(f)) ||
  verifyReaders.some((r) => !['dir', 'git'].includes(r)) ||
  !(gitReaderUpTo >= 0)
) {
  console.error(
    'usage: node --import tsx bench/rollout.bench.ts [--devices 30] [--poll 2s] [--bake 5s] [--min-success 2] [--abort 0] [--held-polls 3] [--synthetic 1000,10000,100000|none] ' +
      '[--verify-readers dir,git|none] [--git-reader-up-to 10000] [--fleets rollout,plain|none]',
  );
  process.exit(2);
}
export const WAVES = [
  { name: 'canary', percent: 10 },
  { name: 'early', percent: 40 },
  { name: 'everyone', percent: 100 },
];
export const rolloutToml = [
  '',
  '[rollout]',
  'waves = [',
  ...WAVES.map((w) => `  { name = "${w.name}", percent = ${w.percent} },`),
  ']',
  `bake = "${opts.bake}"`,
  `min_success = ${minSuccess}`,
  `abort_failure_percent = ${abortPercent}`,
  '',
].join('\n');
export const devices = Array.from({ length: n }, (_, i) => `dev-${String(i + 1).padStart(3, '0')}`);
export const rollout = { waves: WAVES, bakeMs, minSuccess, abortFailurePercent: abortPercent };
export const waveOfDevice = new Map(devices.map((d) => [d, waveOf(rollout, d, {}).wave.name]));
export const members: Record<string, string[]> = Object.fromEntries(
  WAVES.map((w) => [w.name, devices.filter((d) => waveOfDevice.get(d) === w.name)]),
);
