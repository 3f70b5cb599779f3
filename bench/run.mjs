// Runs every benchmark in this folder (`*.bench.mjs`), one after the other, each in its own Node process
// (so one bench's heap and JIT state do not colour the next) with --expose-gc so benches can collect between runs.
// Usage: npm run bench [-- NAME…]   (NAME filters by file name, e.g. `npm run bench -- apply-dry`)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (benches.length === 0) {
  console.error(`no benchmark matches ${filters.join(', ') || '*.bench.mjs'} in ${here}`);
  process.exit(2);
}

let failed = 0;
for (const file of benches) {
  console.log(`\n=== ${file}`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, file)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`${file} failed (${r.signal ?? `exit ${r.status}`})`);
  }
}
process.exitCode = failed ? 1 : 0;
