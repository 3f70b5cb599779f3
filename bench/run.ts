// Runs every benchmark in this folder (`*.bench.ts`), one after the other, each in its own Node process
// (so one bench's heap and JIT state do not colour the next) with --expose-gc so benches can collect between runs,
// and with tsx (--import tsx) that runs their TypeScript. The shared parts are in lib/, the parts of a big bench in a
// folder of its own named after it (e.g. fleet/ for fleet.bench.ts).
// Usage: npm run bench [-- NAME… [--option value…]]   (NAME filters by file name, e.g. `npm run bench -- apply-dry`;
// options are handed to every bench selected, e.g. `npm run bench -- convergence --sizes 20 --runs 3`)
//
//   apply-dry.bench.ts      keystonectl apply-dry on 1,000, 10,000 and 100,000 generated components
//   container-start.bench.ts  create-and-start of a container through ContainerRuntime beside `docker run -d` of the
//                           same image (and with Keystone's options), 10 runs each, medians (~20 s; needs Docker)
//   convergence.bench.ts    a fresh agent bringing up three chains of three and DAGs of 20 and 50 stand-in processes
//                           (known start delays) against the own start path, the critical path of the delays and
//                           the layer-by-layer schedule, at no limit and at the default concurrency (~1-2 min)
//   dashboard.bench.ts      the device dashboard in Debian's Chromium (playwright-core), a fresh context per visit, on
//                           the example stack: bytes of a first visit (login page; signed-in overview, page files vs API
//                           data) against the 150 KB aim, first paint and components table filled against a static
//                           page's first paint (the floor) and the 300 ms aim, the agent's RSS before/after (~1 min)
//   api-latency.bench.ts    GET /v1/components under autocannon while the agent reconciles 50 components, and the
//                           agent's event-loop delay p99 over that reconcile (~1 min)
//   fleet.bench.ts          N = 10, 25, 50 real agents following one signed repository over smart HTTP, reporting to
//                           per-device Git notes in it and in a separate reports repository (--status-repo): requests
//                           and bytes per device per no-op poll (one ls-refs POST) and per commit (reports: one
//                           receive-pack POST each), push → all reported (p50, max), push collisions, ref
//                           advertisement size against N; each N with and without device enrolment (--enrolment
//                           on|off|both: devices/ certificates, --enrollment-key) and the enrolment commits' own cost
//                           (~6 min with --reports separate, ~16 min with both modes)
//   footprint.bench.ts      the agent's RSS with 50 programs in directory mode (API on, API off) and following Git over
//                           smart HTTP with the API on, and both with V8's defaults (KEYSTONE_V8_DEFAULTS=1), beside an empty node
//                           process kept alive (Node's floor) and PM2's daemon from supervision.json (~3 min)
//   git-sync.bench.ts       the Git source on a 1,000-commit repository over smart HTTP: a no-op poll and a one-commit
//                           fetch through GitSource beside native `git fetch --depth=1` (~10 s)
//   notes-cache.bench.ts    10,000 Git-notes reports, one note each, through the reporter against git http-backend: the
//                           size of <state-dir>/notes.git at 1,000 / 5,000 / 10,000 against its bound (8 MiB), bytes
//                           per push; --before-rev REV adds the same through REV's reporter (~15 min)
//   push-to-apply.bench.ts  the agent following a signed fleet repository over smart HTTP: push → apply starts / ends
//                           (p50, p95) with a GitHub webhook and with 2 s polling, beside native `git fetch --depth=1`
//                           and P/2 (~30 s)
//   rollout.bench.ts        staged rollouts (SPEC §14): 30 real agents in waves canary 10 / early 40 / everyone 100 %,
//                           beside the same fleet without [rollout]: a good commit's push → all reported against poll +
//                           apply + two bakes, a bad commit (who applied it, push → halted), requests and bytes per held
//                           device per poll, and one gate read over rollout refs of 1,000 / 10,000 / 100,000 devices,
//                           unsigned and signed + verified against devices/ certificates (--verify-readers dir,git)
//                           (~6.5 min)
//   secrets.bench.ts        a device opening its target's key file (one stanza per device of the target) and a secret,
//                           by the last and the first recipient, at 1 / 100 / 1,000 / 5,000 devices, beside Debian's
//                           `age -d` on the same files; key file and secret bytes per device (~1 min)
//   supervision.bench.ts    the same 50 programs under the agent, supervisord and PM2: restart latency after
//                           kill -9 and its overhead beyond the delay, supervisor RSS, idle CPU with and without
//                           probes (installs supervisor / pm2 when missing; ~6 min)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const firstOption = args.findIndex((a) => a.startsWith('--'));
const filters = firstOption < 0 ? args : args.slice(0, firstOption);
const options = firstOption < 0 ? [] : args.slice(firstOption);
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (benches.length === 0) {
  console.error(`no benchmark matches ${filters.join(', ') || '*.bench.ts'} in ${here}`);
  process.exit(2);
}

let failed = 0;
for (const file of benches) {
  console.log(`\n=== ${file}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', join(here, file), ...options], {
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    failed++;
    console.error(`${file} failed (${r.signal ?? `exit ${r.status}`})`);
  }
}
process.exitCode = failed ? 1 : 0;
