// The fleet bench's options: the fleet sizes, where the reports go, enrolment, the poll interval, the quiet window.
import { parseArgs } from 'node:util';
import { parseDuration } from '../../dist/core/duration.js';

export const { values: opts } = parseArgs({
  args: process.argv.slice(2),
  options: {
    sizes: { type: 'string', default: '10,25,50' },
    reports: { type: 'string', default: 'both' },
    enrolment: { type: 'string', default: 'both' },
    poll: { type: 'string', default: '5s' },
    quiet: { type: 'string', default: '2' },
    'port-base': { type: 'string', default: '31700' },
  },
});
export const sizes: number[] = opts.sizes.split(',').map((s) => Number(s.trim()));
export const pollMs = parseDuration(opts.poll)!;
export const quietPolls = Number(opts.quiet);
export const portBase = Number(opts['port-base']);
export const modes: string[] = opts.reports === 'both' ? ['same', 'separate'] : [opts.reports];
export const enrolments: string[] = opts.enrolment === 'both' ? ['off', 'on'] : [opts.enrolment];
if (
  !['same', 'separate', 'both'].includes(opts.reports) ||
  !['on', 'off', 'both'].includes(opts.enrolment) ||
  sizes.length === 0 ||
  sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 999) ||
  !(pollMs >= 1000) ||
  !(quietPolls >= 1) ||
  !Number.isInteger(portBase) ||
  portBase < 1024 ||
  portBase + Math.max(...sizes) >= 32768
) {
  console.error(
    'usage: node --import tsx bench/fleet.bench.ts [--sizes 10,25,50] [--reports same|separate|both] [--enrolment on|off|both] [--poll 5s] [--quiet 2] [--port-base 31700]',
  );
  process.exit(2);
}
