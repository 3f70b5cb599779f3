// Faults survived (issue 18): runs the fault suites — a faulty Git server in front of the real git http-backend, a
// state directory that fills up, the wall clock stepped back and forward, GitHub's published webhook payloads — and
// prints one line per suite and a total: "faults: N survived of N". Each scenario is one test named after its fault,
// so the count is the tests that passed. Run with `npm run faults` (builds first); `-- --suite disk-full` for one.
//
// The suites are ordinary vitest files under test/reliability/ (npm test runs them too); this script is their
// figure. A suite that skipped (no root for the tmpfs mount, no faketime) is reported as skipped with the reason,
// and makes the exit code 1 when --strict is given (CI).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const projectDir = join(here, '..');

/** The fault suites, in the order they are printed. */
const SUITES = [
  { key: 'faulty-git-server', title: 'a faulty Git server', file: 'test/e2e/faulty-git-server.e2e.test.ts' },
  { key: 'disk-full', title: 'disk full', file: 'test/e2e/disk-full.e2e.test.ts' },
  { key: 'clock-jumps', title: 'clock jumps', file: 'test/e2e/clock-jumps.e2e.test.ts' },
  {
    key: 'webhook-examples',
    title: "GitHub's example webhook payloads",
    file: 'test/reliability/webhook-examples.test.ts',
  },
];

const { values: opts } = parseArgs({
  options: {
    suite: { type: 'string', multiple: true },
    strict: { type: 'boolean', default: false },
  },
});
const chosen = opts.suite ? SUITES.filter((s) => opts.suite.includes(s.key)) : SUITES;
if (opts.suite && chosen.length !== opts.suite.length) {
  console.error(`--suite: one of ${SUITES.map((s) => s.key).join(', ')}`);
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'keystone-faults-'));
const out = join(work, 'results.json');
const started = Date.now();
// One vitest run for every chosen suite: the files run in parallel as in npm test.
const run = spawnSync(
  process.execPath,
  [
    join(projectDir, 'node_modules', 'vitest', 'vitest.mjs'),
    'run',
    ...chosen.map((s) => s.file),
    '--reporter=json',
    `--outputFile=${out}`,
  ],
  {
    cwd: projectDir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: process.env,
  },
);
let report;
try {
  report = JSON.parse(readFileSync(out, 'utf8'));
} catch {
  console.error(`faults: vitest wrote no results (exit ${run.status ?? run.signal})`);
  rmSync(work, { recursive: true, force: true });
  process.exit(1);
}
rmSync(work, { recursive: true, force: true });

const rows = [];
for (const suite of chosen) {
  const file = report.testResults.find((r) => r.name.endsWith(suite.file));
  const tests = file?.assertionResults ?? [];
  const count = (status) => tests.filter((t) => t.status === status).length;
  rows.push({
    ...suite,
    found: file !== undefined,
    passed: count('passed'),
    failed: tests.filter((t) => t.status === 'failed').map((t) => t.fullName),
    skipped: count('skipped') + count('pending') + count('todo'),
    total: tests.length,
  });
}

const seconds = (Date.now() - started) / 1000;
console.log(`\nfaults — node ${process.version}; ${chosen.length} suites (${seconds.toFixed(0)} s)\n`);
for (const r of rows) {
  const extra = [
    r.failed.length ? `${r.failed.length} FAILED` : '',
    r.skipped ? `${r.skipped} skipped` : '',
    r.found ? '' : 'file not found',
  ]
    .filter(Boolean)
    .join(', ');
  console.log(
    `  ${r.title.padEnd(36)} ${String(r.passed).padStart(3)} survived of ${String(r.total).padStart(3)}${extra ? `  (${extra})` : ''}`,
  );
  for (const name of r.failed) console.log(`      failed: ${name}`);
}
const passed = rows.reduce((n, r) => n + r.passed, 0);
const total = rows.reduce((n, r) => n + r.total, 0);
const skipped = rows.reduce((n, r) => n + r.skipped, 0);
const failed = rows.reduce((n, r) => n + r.failed.length, 0);
console.log(
  `\nfaults: ${passed} survived of ${total}${skipped ? ` (${skipped} skipped: see vitest's summary above for the missing requirement)` : ''}`,
);

const resultsDir = join(here, 'results');
mkdirSync(resultsDir, { recursive: true });
const resultsFile = join(resultsDir, 'faults.json');
writeFileSync(
  resultsFile,
  JSON.stringify(
    {
      script: basename(fileURLToPath(import.meta.url)),
      date: new Date().toISOString(),
      node: process.version,
      seconds: +seconds.toFixed(1),
      passed,
      total,
      skipped,
      failed,
      suites: rows,
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${resultsFile}`);
if (failed > 0 || rows.some((r) => !r.found || r.total === 0) || (opts.strict && skipped > 0) || run.status !== 0)
  process.exitCode = 1;
