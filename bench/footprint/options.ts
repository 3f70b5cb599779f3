// The footprint bench's options: the programs, the windows, the rows, the ports, what runs (the bundle through the
// package's launchers, or dist/), and the aims.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchDir, projectDir } from '../lib/paths.js';

export const ALL = ['floor', 'dir', 'dir-noapi', 'git', 'dir-v8', 'git-v8', 'dir-args', 'git-args'];
export const { values: opts } = parseArgs({
  options: {
    programs: { type: 'string', default: '50' },
    idle: { type: 'string', default: '20' },
    settle: { type: 'string', default: '20' },
    cold: { type: 'string', default: '10' },
    only: { type: 'string', default: 'floor,dir,dir-noapi,git,dir-v8,git-v8' },
    'port-base': { type: 'string', default: '26000' },
    'node-args': { type: 'string', default: '' },
    build: { type: 'string', default: 'bundle' },
  },
});
export const N = Number(opts.programs);
export const IDLE_S = Number(opts.idle);
export const SETTLE_S = Number(opts.settle);
export const COLD_RUNS = Number(opts.cold);
export const PORT_BASE = Number(opts['port-base']);
export const only = opts.only.split(',').map((s) => s.trim());
export const NODE_ARGS = opts['node-args'].split(' ').filter(Boolean);
if (NODE_ARGS.length && !only.includes('dir-args')) only.push('dir-args', 'git-args');
const counts = [N, IDLE_S, SETTLE_S + 1, COLD_RUNS + 1];
if (
  counts.some((c) => !Number.isInteger(c) || c < 1) ||
  !Number.isFinite(PORT_BASE) ||
  only.some((s) => !ALL.includes(s)) ||
  !['bundle', 'dist'].includes(opts.build)
) {
  console.error(
    `usage: node --import tsx bench/footprint.bench.ts [--programs 50] [--idle 20] [--settle 20] [--cold 10] [--only ${ALL.join(',')}] [--port-base 26000] [--node-args=--max-semi-space-size=1] [--build bundle|dist]`,
  );
  process.exit(2);
}

/** What runs: the package's bundle (made here from dist/) through the package's launchers, or dist/ through bin/. */
export const BUNDLE = opts.build === 'bundle' ? join(projectDir, 'dist-bundle') : undefined;
export const LAUNCHERS = join(projectDir, 'packaging', 'launchers');
/** The launchers' environment for an uninstalled bundle: this directory, and the Node running the bench. */
export const LAUNCH_ENV: Record<string, string> = BUNDLE
  ? { KEYSTONE_LIB: BUNDLE, KEYSTONE_NODE: process.execPath }
  : {};

export const AIM_DIR_MIB = 55;
export const AIM_GIT_MIB = 65;
export const AIM_COLD_MS = 150;
export const aimOf = (key: string): number | undefined =>
  key.startsWith('git') ? AIM_GIT_MIB : key.startsWith('dir') ? AIM_DIR_MIB : undefined;
export const START_SAMPLES = 5;
export const MiB = (kib: number): number => kib / 1024;
export const resultsFile = join(benchDir, 'results', 'footprint.json');
export const names = Array.from({ length: N }, (_, i) => `p${String(i).padStart(2, '0')}`);
export const ports = names.map((_, i) => PORT_BASE + i);
