// Benchmark of a fleet following one repository (issue 14): what N real agents cost the Git host while they poll and
// when one commit reaches them all, and whether that cost per device stays flat as N grows. Run by hand (`npm run
// bench -- fleet`, which builds first); it asserts nothing, it reports.
//
// The fleet repository: one component (an idle process, a copy of `sleep` under the run's work directory so that
// the clean-up finds it by path; no health check), signed with a key made by `keystonectl keygen` (`keystonectl
// sign` before every commit, untimed). It is served over smart HTTP by the project's loopback server
// (src/dev/git-http-server.ts: real `git http-backend`, every request recorded with method, path, query, status,
// bytes) in a child process (lib/counted-git-server.ts), and N real agents follow it, each a child process in its own
// process group:
//   keystone agent --repo http://127.0.0.1:PORT/fleet-N.git --ref main --plan plans/idle.toml --device dev-NNN
//     --poll 5s --state-dir FRESH --trusted-key K.pub --status git-notes --listen 127.0.0.1:PORT_i --log-format json
//     --stop-on-exit
// Each device reports on refs/notes/keystone-devices/<device> (git-notes-reporter.ts): `pending` when it starts
// applying a commit and `success` when done, one push each: a single `POST git-receive-pack` naming the ref's old value,
// without the ref advertisement (receive-pack-push.ts; the advertisement only when the server refused it as stale).
// A poll is a single protocol v2 ls-refs `POST git-upload-pack` (`git-protocol: version=2`): the discovery `GET
// info/refs` only on an agent's first look (git-remote-cache.ts, git-ls-refs.ts). A fetch is still protocol v1 (the
// advertisement `GET` and the pack `POST`: isomorphic-git's fetch). The bench reads those refs straight from the bare
// repository every ~200 ms (`git for-each-ref`: a notes commit's subject is `keystone/<device>: <state> <commit>`).
// Where the reports go (--reports same|separate|both, default both; both runs each N twice, a fresh fleet each):
//   same:     to the followed repository, fleet-N.git (every device's notes ref is in every fetch's advertisement);
//   separate: to a second bare repository on the same server, reports-N.git, with
//             --status-repo http://127.0.0.1:PORT/reports-N.git; the followed repository (fleet-N-sep.git) then holds
//             only its branch, and the device refs are read from reports-N.git.
//
// For each N (--sizes 10,25,50) and mode, a fresh bare repository (and reports repository), fresh state
// directories and a fresh fleet:
//   1. start the N agents; wait (polling, with a deadline) until every device's success note for the tip is there;
//   2. quiet: --quiet poll intervals (default 2) of no-op polls; requests and bytes per device per poll;
//   3. the ref advertisements at this N: info/refs for receive-pack of the repository the reports go to (a report
//      asks for it only when a push was refused as stale), for upload-pack of the followed one in protocol v1 (every
//      fetch of isomorphic-git starts with it), and in protocol v2 (an agent's first look only);
//   4. push one commit bumping the component's version (to the bare repository on disk); from `git push` returning
//      until every device's success note for it is on the server: p50 and max per device; everything the server
//      served meanwhile, by kind (look = protocol v2 upload-pack, fetch = v1 upload-pack, report = receive-pack),
//      the commit's own cost per device being its fetches and reports plus one look per device (the one that found
//      it; later no-op looks in the window are not the commit's); receive-pack POSTs per device against the two
//      reports (pending, success) that were delivered, the advertisements (GETs) asked for by looks and reports (0
//      when nothing was refused), and any answer other than 200 (push collisions).
// Device identity (issue 29, SPEC §15; --enrolment on|off|both, default both: both runs each N and reports mode twice,
// off then on, a fresh fleet each, back to back):
//   off: the repository has no devices/ and the agents no --enrollment-key. Agents of this version sign every report
//        whatever the flags (the key pair is made at first start: a notes entry carries `  ~ <key id> <signature>`),
//        so off is "without enrolment", not "unsigned": the unsigned baseline is an earlier commit's (docs say which);
//   on:  before the agents start, each device's key pair is made in its fresh state directory and its public half
//        taken with `keystone identity --json --state-dir FRESH --device dev-NNN`, enrolled with `keystonectl enroll
//        --key enroll.key --identity dev-NNN.json --out devices/dev-NNN.cert` (an enrolment key made by `keystonectl
//        keygen`), and the agents get `--enrollment-key enroll.pub`. The fleet comes up on the same first commit as
//        off; then the enrolment commit (devices/ with the N certificates, nothing else: certificates are not in
//        SHA256SUMS, so nothing is re-signed) is pushed and measured on its own (it is fetched by every device: N
//        certificates each, once), then one more enrolment (one certificate more, for a device that does not run: what
//        a single enrolment costs a fleet of N, the devices/ tree rewritten). Then the quiet window and the commit, as
//        for off, with devices/ in the tree. Without enrolment, two commits of a README line take the place of those
//        two (the reference, and the same history). After each, the size of dev-001's Git cache (its packs).
// Printed per N with the variants (reports mode × enrolment) side by side; then per device, enrolment on ÷ off for
// each N; per variant: per-device cost at the largest N ÷ at the smallest (aim ≤ 1.1, flat), the followed
// repository's part (look, fetch) apart from the reports'; the enrolment commits' cost per device against N; time to
// all reported against one poll interval + the apply time (aim: within 10 s at N = 50).
//
// Options: --sizes 10,25,50  --reports same|separate|both (default both)  --enrolment on|off|both (default both)
//          --poll 5s  --quiet 2 (poll intervals)
//          --port-base 31700 (the agents' API ports, port-base…port-base+N−1; keep below 32768, the ephemeral range)
import { performance } from 'node:perf_hooks';
import { busyNote, load1 } from './lib/machine.js';
import { openFleetBench } from './lib/open-fleet-bench.js';
import { killStragglers, signalGroup } from './lib/processes.js';
import { fmt } from './lib/stats.js';
import { enrolments, modes, sizes } from './fleet/options.js';
import { printFleet } from './fleet/print.js';
import { writeFleetResults } from './fleet/results.js';
import { runSize, type SizeResult, type Variant } from './fleet/run-size.js';
import { prepareFleet, type FleetContext } from './fleet/setup.js';
import { summarise } from './fleet/summary.js';

const bench = await openFleetBench('fleet');
const { others, loadBefore, tStart, server, rmWork, work } = bench;
let ctx: FleetContext | undefined;
try {
  ctx = await prepareFleet(bench);
  // The variants: reports mode × enrolment, in this order (a variant's key is `mode/enrolment`).
  const variants: Variant[] = modes.flatMap((mode) =>
    enrolments.map((enrolment) => ({ key: `${mode}/${enrolment}`, mode, enrolment })),
  );
  const byMode: Record<string, SizeResult[]> = Object.fromEntries(variants.map((v) => [v.key, []]));
  // Each N in each variant, the variants of one N back to back (so that a change in the machine's load falls on all).
  for (const [n, variant] of sizes.flatMap((size) => variants.map((v): [number, Variant] => [size, v])))
    byMode[variant.key]!.push(await runSize(ctx, n, variant));
  const loadAfter = load1();
  const othersPercent = others.percent();

  const { summaries, onOff } = summarise(variants, byMode);
  printFleet(variants, byMode, summaries, onOff);
  const note = busyNote(othersPercent, loadBefore, loadAfter);
  if (note) console.log(note);
  const resultsFile = writeFleetResults(
    { variants, byMode, summaries, onOff },
    { loadBefore, loadAfter, othersPercent, tStart },
  );
  console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - tStart) / 1000)} s)`);
} finally {
  // Every agent in its own process group: SIGKILL the groups that are left (a failure midway), then anything
  // else still naming the work directory (the idle programs).
  for (const a of ctx?.agents ?? []) if (!a.exit) signalGroup(a.pid, 'SIGKILL');
  await server.stop();
  await killStragglers([], work);
  rmWork();
}
