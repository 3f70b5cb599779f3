// The dashboard bench's options and constants: runs, the stack, ports, the aims, the browser's flags, the floor page.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchDir } from '../lib/paths.js';

export const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    components: { type: 'string', default: 'example' },
    'port-base': { type: 'string', default: '24000' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    screenshot: { type: 'string' },
  },
});
export const RUNS = Number(opts.runs);
export const EXAMPLE = opts.components === 'example';
export const N_GENERATED = EXAMPLE ? 0 : Number(opts.components);
export const PORT_BASE = Number(opts['port-base']);
if (
  !Number.isInteger(RUNS) ||
  RUNS < 1 ||
  (!EXAMPLE && !(Number.isInteger(N_GENERATED) && N_GENERATED >= 1 && N_GENERATED <= 500)) ||
  !Number.isInteger(PORT_BASE)
) {
  console.error(
    'usage: node --import tsx bench/dashboard.bench.ts [--runs 7] [--components example|N] [--port-base 24000] [--chromium /usr/bin/chromium] [--screenshot FILE]',
  );
  process.exit(2);
}
export const AIM_BYTES = 150_000;
export const AIM_FCP_MS = 300;
export const KB = (b: number): number => b / 1000;
export const MiB = (kib: number): number => kib / 1024;
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
export const EXAMPLE_PORTS = ['18086', '18087', '18088'];
export const PAGE_TIMEOUT_MS = 30_000;
/** Between two visits. */
export const PAUSE_MS = 1000;
export const resultsFile = join(benchDir, 'results', 'dashboard.json');
export const FLOOR_HTML =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>floor</title></head><body><p>Keystone</p></body></html>';
