// Benchmark of staged rollouts (issue 15, "Measure"; SPEC §14): what `[rollout]` in fleet.toml costs in time and in
// requests, with N real agents following one signed repository, beside the same fleet without it. Run by hand (`npm
// run bench -- rollout`, which builds first); it asserts nothing, it reports.
//
// The fleet: N real agents (--devices, default 30), each a child process in its own process group:
//   keystone agent --repo http://127.0.0.1:PORT/NAME.git --ref main --device dev-NNN --poll 2s --trusted-key K.pub
//     --status git-notes --listen none --state-dir FRESH --log-format json --stop-on-exit
// No --plan: every device takes its plan from the commit's fleet.toml (one target, selector {}, plans/idle.toml: one
// idle process, a copy of `sleep` under the run's work directory). The repository is signed (`keystonectl keygen` /
// `sign` before every commit, untimed) and served over smart HTTP by the project's loopback server
// (src/dev/git-http-server.ts: real `git http-backend`, every request recorded with method, path, protocol, status
// and bytes) in a child process (lib/counted-git-server.ts). The bench reads the devices' notes refs
// (refs/notes/keystone-devices/<device>: `keystone/<device>: <state> <commit>`) and rollout refs
// (refs/keystone-rollout/<wave>/<bucket>/<device>/<commit>-<state>) straight from the bare repository every ~200 ms.
//
// Two fleets, one after the other, the same N, fresh state directories and repositories, the same commits:
//   rollout: fleet.toml with
//              [rollout] waves = canary 10, early 40, everyone 100 (percent: membership by a hash of the name,
//              src/core/rollout.ts waveOf); bake = --bake (5s); min_success = --min-success (2);
//              abort_failure_percent = --abort (0)
//   plain:   the same fleet.toml without [rollout]: every device applies each commit at once.
// Each fleet first comes up on commit v1 (untimed; with [rollout] it walks the waves, so that every device is known
// in its wave, as in a fleet that has run a while), then:
//   (a) a good commit (the idle component's version bumped): from `git push` returning until every device's success
//       note is on the server; per wave, when its devices opened their gate and reported. Reference: the floor of a
//       staged rollout, one poll + the slowest apply (the agents' own `reconcile plan` → done, as in
//       fleet.bench.ts) + two bakes; and the plain fleet's time for the same kind of commit (ratio).
//   (b) a bad commit (its component never gets healthy: a health check on a closed port, interval 200ms,
//       failure_threshold 5, so a start budget of 1 s, as test/support/stack-fixture.ts neverHealthy): which devices
//       applied it (their `reconcile plan` line), per wave; from `git push` to the halt being visible in the rollout
//       refs (a wave past abort_failure_percent, computed as `fleet status` does with src/core/rollout-gate.ts) and to
//       every device outside the canary having reported its halt; `keystonectl fleet status --json` is run once
//       after, for its rollout.halted. The plain fleet applies it everywhere: count and time to all failure notes.
//   (c) the cost of waiting at a gate: the canary's agents are stopped and one more good commit is pushed, so every
//       other device holds it (waiting for the canary) for as long as the bench likes; once every held device has
//       reported `held`, --held-polls poll intervals (default 3) of the server's request log: requests and bytes per
//       held device per poll (aim ≤ 2: one look and one gate read, each one ls-refs POST), split into looks and gate
//       reads by their request bodies (each an ls-refs request whose size the bench computes).
//   (c') a synthetic read at scale (--synthetic 1000,10000,100000): a bare repository holding the rollout refs of a
//       fleet of that many devices (written as a packed-refs file; each device a ref for the commit it runs and,
//       unless it already runs the new one, one for the new commit in a mixed state, ~1.6 refs per device, every ref
//       pointing at one existing commit), served by the same loopback server; the real RolloutGate
//       (dist/agent/rollout-gate.js) with refListerFor (dist/source/ref-lister.js) reads it as a device of the last
//       wave does, four times as a newly started agent would (one bucket of each wave first, at most 16 times more the
//       next time, then sized from what it saw: a sample past ~700 refs). Requests, bytes and refs per read, from the
//       server's log and the lister, against the aim of ~100 KB; the listing's time and the whole decision's.
//       Device identity (issue 29, SPEC §15), in the same run and with the same seeded bucket sample: the same fleet's
//       refs signed (each device a key pair of its own; each ref name ends `.<key id><signature>`, rolloutRef with
//       reportSigner) and every device enrolled (a certificate by signCertificate under one enrolment key), read by a
//       gate whose held commit has its admission (reportAdmission over the commit's devices/, made once per held
//       commit as take-revision.ts does): every report is counted only once it verifies. devices/ is read from a
//       plain directory (DirectoryReader: the verification alone) and from a bare Git repository holding the commit
//       in one pack (GitTreeReader, the reader an agent gives the admission over its cache), --verify-readers
//       dir,git; the Git reader makes one read only past --git-reader-up-to devices (10,000). Reference: the unsigned
//       read without devices/ (agents before issue 29): aim, the decision within 2× of it.
// Results: printed beside their references, and bench/results/rollout.json.
//
// Options: --devices 30  --poll 2s  --bake 5s  --min-success 2  --abort 0  --held-polls 3
//          --synthetic 1000,10000,100000 (none: skip)  --verify-readers dir,git (none: unsigned only)
//          --git-reader-up-to 10000  --fleets rollout,plain
import { chmodSync, copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { busyNote, load1, resultsHead } from './lib/machine.js';
import { openFleetBench } from './lib/open-fleet-bench.js';
import { benchDir, ensureDir } from './lib/paths.js';
import { portFree } from './lib/ports.js';
import { killStragglers, signalGroup } from './lib/processes.js';
import { fmt, round } from './lib/stats.js';
import { abortPercent, bakeMs, fleets, members, minSuccess, n, opts, pollMs, WAVES } from './rollout/options.js';
import { printRollout } from './rollout/report.js';
import { fleetRunner, type FleetResult, type RolloutContext } from './rollout/run-fleet.js';
import { syntheticReads } from './rollout/synthetic.js';

const resultsFile = join(benchDir, 'results', 'rollout.json');
const { run, git, keystonectl, work, rmWork, others, loadBefore, tStart, server } = await openFleetBench('rollout');
let ctx: RolloutContext | undefined;
const results: { fleets: Record<string, FleetResult>; synthetic?: unknown } = { fleets: {} };
try {
  // The idle program, and a port nothing listens on (the bad commit's health check).
  ensureDir(join(work, 'bin'));
  chmodSync(join(work, 'bin'), 0o755);
  const idle = join(work, 'bin', 'idle-sleep');
  copyFileSync((await run('sh', ['-c', 'command -v sleep'])).stdout.trim(), idle);
  chmodSync(idle, 0o755);
  let closedPort = 39_000 + Math.floor(Math.random() * 1000);
  while (!(await portFree(closedPort))) closedPort++;
  ensureDir(join(work, 'keys'));
  const keyPrefix = join(work, 'keys', 'bench');
  await keystonectl('keygen', '--out', keyPrefix, '--no-password');
  const port = await server.port;
  ctx = { git, keystonectl, work, server, port, keyPrefix, idle, closedPort, agents: [] };
  const { runFleet } = fleetRunner(ctx);

  for (const kind of fleets) results.fleets[kind] = await runFleet(kind);

  const synthetic = await syntheticReads(ctx);
  results.synthetic = synthetic;
  const loadAfter = load1();
  const othersPercent = others.percent();

  // ─── the report ───
  printRollout(results, synthetic);
  const note = busyNote(othersPercent, loadBefore, loadAfter);
  if (note) console.log(note);

  ensureDir(join(benchDir, 'results'));
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        ...resultsHead('rollout', { loadBefore, loadAfter, othersPercent, withGit: true }),
        devices: n,
        pollMs,
        bakeMs,
        rollout: {
          waves: WAVES,
          bake: opts.bake,
          minSuccess,
          abortFailurePercent: abortPercent,
          members: Object.fromEntries(Object.entries(members).map(([w, ds]) => [w, ds.length])),
        },
        command: `keystone agent --repo http://127.0.0.1:PORT/fleet-KIND.git --ref main --device dev-NNN --poll ${opts.poll} --trusted-key K.pub --status git-notes --listen none --state-dir FRESH --log-format json --stop-on-exit`,
        references: {
          good: 'with [rollout]: poll + slowest apply + 2 × bake (the floor); without: poll + slowest apply; and the two fleets against each other',
          bad: 'with [rollout]: the canary only applies it; halt reported by every other device within poll + failed apply + poll',
          held: 'requests per held device per poll ≤ 2 (a look and a gate read)',
          synthetic: '~100 KB per gate read, not growing with the fleet beyond the sample',
          syntheticSigned:
            'signed refs + verification against devices/ certificates ÷ unsigned refs without devices/, same sample: the decision within ×2',
        },
        fleets: results.fleets,
        synthetic,
        benchSeconds: round((performance.now() - tStart) / 1000, 1),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - tStart) / 1000)} s)`);
} finally {
  for (const a of ctx?.agents ?? []) if (!a.exit) signalGroup(a.pid, 'SIGKILL');
  await server.stop();
  await killStragglers([], work);
  rmWork();
}
