// The supervision bench's options, its programs (names and ports) and where PM2 is installed.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchDir } from '../lib/paths.js';

export const resultsFile = join(benchDir, 'results', 'supervision.json');
export const cacheDir = join(benchDir, '.cache');
export const pm2Bin = join(cacheDir, 'node_modules', 'pm2', 'bin', 'pm2');
export const ALL = ['keystone', 'keystone-probed', 'supervisord', 'pm2'];

export const { values: opts } = parseArgs({
  options: {
    programs: { type: 'string', default: '50' },
    kills: { type: 'string', default: '20' },
    burst: { type: 'string', default: '5' },
    idle: { type: 'string', default: '60' },
    gap: { type: 'string', default: '500' },
    only: { type: 'string', default: ALL.join(',') },
    'port-base': { type: 'string', default: '32000' },
  },
});
export const N = Number(opts.programs);
export const KILLS = Number(opts.kills);
export const BURST = Number(opts.burst);
export const IDLE_S = Number(opts.idle);
export const GAP_MS = Number(opts.gap);
export const PORT_BASE = Number(opts['port-base']);
export const only = opts.only.split(',').map((s) => s.trim());
if (
  ![N, KILLS, BURST, IDLE_S, GAP_MS, PORT_BASE].every((x) => Number.isFinite(x) && x >= 0) ||
  N < 1 ||
  !Number.isInteger(IDLE_S) ||
  IDLE_S < 1 ||
  KILLS > N ||
  BURST > N ||
  only.some((s) => !ALL.includes(s))
) {
  console.error(
    `usage: node --import tsx bench/supervision.bench.ts [--programs 50] [--kills 20] [--burst 5] [--idle 60] [--gap 500] [--only ${ALL.join(',')}] [--port-base 32000]`,
  );
  process.exit(2);
}

export const names = Array.from({ length: N }, (_, i) => `p${String(i).padStart(2, '0')}`);
export const ports = names.map((_, i) => PORT_BASE + i);
export const isRoot = process.getuid?.() === 0;
export const MiB = (kib: number): number => kib / 1024;
