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
// and bytes) in a child process (counted-git-server.mjs). The bench reads the devices' notes refs
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
//       fleet.bench.mjs) + two bakes; and the plain fleet's time for the same kind of commit (ratio).
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
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { openFleetBench } from './counted-git-server.mjs';


await main();

// ─── the benchmark ──────────────────────────────────────────────────────────────────────────────────────────

async function main() {
  const { parseDuration } = await import('../dist/core/duration.js');
  const { waveOf, waveHash } = await import('../dist/core/rollout.js');
  const { waveCounts, waveHalted } = await import('../dist/core/rollout-gate.js');
  const { failuresPrefix, parseRolloutRef, rolloutRef, rolloutPrefixes } = await import('../dist/report/rollout-refs.js');
  const { lsRefsRequest } = await import('../dist/git/git-ls-refs.js');
  const { RolloutGate } = await import('../dist/agent/rollout-gate.js');
  const { refListerFor } = await import('../dist/source/ref-lister.js');
  const { reportAdmission } = await import('../dist/agent/report-admission.js');
  const { reportSigner } = await import('../dist/identity/report-signature.js');
  const h = await import('./harness.mjs');
  const { benchDir, epochNow, fmt, median, ratio, round, sleep } = h;
  const { values: opts } = parseArgs({
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
  const n = Number(opts.devices);
  const pollMs = parseDuration(opts.poll);
  const bakeMs = parseDuration(opts.bake);
  const minSuccess = Number(opts['min-success']);
  const abortPercent = Number(opts.abort);
  const heldPolls = Number(opts['held-polls']);
  const synthSizes = opts.synthetic === 'none' || opts.synthetic === '' ? [] : opts.synthetic.split(',').map((s) => Number(s.trim()));
  const fleets = opts.fleets === 'none' ? [] : opts.fleets.split(',').map((s) => s.trim());
  const verifyReaders = opts['verify-readers'] === 'none' ? [] : opts['verify-readers'].split(',').map((s) => s.trim());
  const gitReaderUpTo = Number(opts['git-reader-up-to']);
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
      'usage: node bench/rollout.bench.mjs [--devices 30] [--poll 2s] [--bake 5s] [--min-success 2] [--abort 0] [--held-polls 3] [--synthetic 1000,10000,100000|none] ' +
        '[--verify-readers dir,git|none] [--git-reader-up-to 10000] [--fleets rollout,plain|none]',
    );
    process.exit(2);
  }
  const WAVES = [
    { name: 'canary', percent: 10 },
    { name: 'early', percent: 40 },
    { name: 'everyone', percent: 100 },
  ];
  const rolloutToml = [
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
  const resultsFile = join(benchDir, 'results', 'rollout.json');

  const { run, git, keystonectl, work, rmWork, others, loadBefore, tStart, server } = await openFleetBench('rollout');
  const serverPort = server.port;
  const { mark, records } = server;

  let agents = [];
  const devices = Array.from({ length: n }, (_, i) => `dev-${String(i + 1).padStart(3, '0')}`);
  const rollout = { waves: WAVES, bakeMs, minSuccess, abortFailurePercent: abortPercent };
  const waveOfDevice = new Map(devices.map((d) => [d, waveOf(rollout, d, {}).wave.name]));
  const members = Object.fromEntries(WAVES.map((w) => [w.name, devices.filter((d) => waveOfDevice.get(d) === w.name)]));

  /** One agent: `keystone agent` with the fleet's options, its JSON log parsed as it comes (as harness.startAgent). */
  const startDevice = (url, device, stateDir, trustedKey) => {
    const args = [
      h.KEYSTONE_BIN, 'agent', '--repo', url, '--ref', 'main', '--device', device, '--poll', opts.poll,
      '--trusted-key', trustedKey, '--status', 'git-notes', '--listen', 'none',
      '--state-dir', stateDir, '--log-format', 'json', '--stop-on-exit',
    ];
    const child = spawn(process.execPath, args, { cwd: h.projectDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const a = { device, pid: child.pid, events: [], stderr: '', exit: undefined };
    a.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((a.exit = { code, signal }))));
    child.stderr.on('data', (d) => (a.stderr = (a.stderr + d).slice(-5000)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        rec = { msg: line };
      }
      rec.recv = epochNow();
      rec.t = rec.time ? Date.parse(rec.time) : rec.recv;
      a.events.push(rec);
    });
    a.stop = async (graceMs = 15_000) => {
      if (a.exit) return a.exit;
      h.signalPid(a.pid, 'SIGTERM');
      const t = setTimeout(() => h.signalGroup(a.pid, 'SIGKILL'), graceMs);
      const r = await a.exited;
      clearTimeout(t);
      return r;
    };
    return a;
  };

  const results = { fleets: {} };
  try {
    // The idle program, and a port nothing listens on (the bad commit's health check).
    h.ensureDir(join(work, 'bin'));
    chmodSync(join(work, 'bin'), 0o755);
    const idle = join(work, 'bin', 'idle-sleep');
    copyFileSync((await run('sh', ['-c', 'command -v sleep'])).stdout.trim(), idle);
    chmodSync(idle, 0o755);
    let closedPort = 39_000 + Math.floor(Math.random() * 1000);
    while (!(await h.portFree(closedPort))) closedPort++;
    h.ensureDir(join(work, 'keys'));
    const keyPrefix = join(work, 'keys', 'bench');
    await keystonectl('keygen', '--out', keyPrefix, '--no-password');
    const port = await serverPort;

    /** A work tree for one fleet's repository; `commit(kind, version)` writes, signs and commits; returns the sha. */
    const makeRepo = async (name, withRollout) => {
      const ws = join(work, `ws-${name}`);
      await git('init', '--quiet', '--initial-branch=main', ws);
      h.ensureDir(join(ws, 'recipes'));
      h.ensureDir(join(ws, 'plans'));
      writeFileSync(join(ws, 'plans', 'idle.toml'), '# Generated by bench/rollout.bench.mjs.\n\n[[components]]\nname = "idle"\nrecipe = "recipes/com.bench.idle.toml"\n');
      writeFileSync(
        join(ws, 'fleet.toml'),
        `# Generated by bench/rollout.bench.mjs.\n[[targets]]\nname = "all"\nselector = {}\nplan = "plans/idle.toml"\n${withRollout ? rolloutToml : ''}`,
      );
      const bare = join(work, 'srv', `${name}.git`);
      await git('init', '--quiet', '--bare', '--initial-branch=main', bare);
      await git('-C', bare, 'config', 'http.receivepack', 'true');
      const commit = async (kind, version) => {
        const lines = [
          `# Benchmark idle component (${kind}).`,
          '[metadata]',
          'name = "com.bench.idle"',
          `version = "${version}"`,
          '',
          '[lifecycle.run]',
          'type = "process"',
          'restart_policy = "always"',
          '',
          '[lifecycle.run.exec]',
          `command = ${JSON.stringify(idle)}`,
          'args = ["100000"]',
          '',
        ];
        if (kind === 'bad')
          lines.push('[lifecycle.run.health]', `check = "http://127.0.0.1:${closedPort}/never"`, 'interval = "200ms"', 'timeout = "150ms"', 'failure_threshold = 5', '');
        writeFileSync(join(ws, 'recipes', 'com.bench.idle.toml'), lines.join('\n'));
        await keystonectl('sign', '--key', `${keyPrefix}.key`, '--repo', ws);
        await git('-C', ws, 'add', '-A');
        await git('-C', ws, 'commit', '--quiet', '-m', `idle ${version} (${kind})`);
        return (await git('-C', ws, 'rev-parse', 'HEAD')).stdout.trim();
      };
      const push = async () => (await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main')).endedAt;
      return { name, ws, bare, url: `http://127.0.0.1:${port}/${name}.git`, commit, push };
    };

    /** device → { state, commit } from the notes refs; and the rollout refs, parsed. */
    const readNotes = async (bare) => {
      const out = (await git('-C', bare, 'for-each-ref', '--format=%(refname) %(contents:subject)', 'refs/notes/keystone-devices/')).stdout;
      const notes = new Map();
      for (const line of out.split('\n')) {
        const m = /^refs\/notes\/keystone-devices\/(\S+) keystone\/\S+: (\S+) ([0-9a-f]{40})$/.exec(line);
        if (m) notes.set(decodeURIComponent(m[1]), { state: m[2], commit: m[3] });
      }
      return notes;
    };
    const readRolloutRefs = async (bare) =>
      (await git('-C', bare, 'for-each-ref', '--format=%(refname)', 'refs/keystone-rollout/')).stdout.split('\n').filter(Boolean).map(parseRolloutRef).filter(Boolean);

    /**
     * Polls the bare repository every ~200 ms until `done(notes, refs, t)` says so (deadline); `each(notes, refs, t)`
     * sees every sample (to record first moments).
     */
    const watch = async (bare, { done, each, deadlineMs, what }) => {
      const until = epochNow() + deadlineMs;
      for (;;) {
        const [notes, refs] = await Promise.all([readNotes(bare), readRolloutRefs(bare)]);
        const t = epochNow();
        each?.(notes, refs, t);
        if (done(notes, refs, t)) return;
        if (t > until) {
          const exited = agents.filter((a) => a.exit).map((a) => `${a.device}: ${a.stderr.slice(-300)}`);
          const summary = [...notes].map(([d, s]) => `${d}=${s.state}:${s.commit.slice(0, 7)}`).join(' ');
          throw new Error(`${what}: not done after ${fmt(deadlineMs)} ms (notes: ${summary})${exited.length ? `; exited: ${exited.join(' | ')}` : ''}`);
        }
        await sleep(200);
      }
    };
    const waitAllState = (bare, sha, state, deadlineMs, what, list = devices) => {
      const seen = new Map();
      return watch(bare, {
        each: (notes, _r, t) => {
          for (const d of list) if (!seen.has(d) && notes.get(d)?.commit === sha && notes.get(d)?.state === state) seen.set(d, t);
        },
        done: () => seen.size === list.length,
        deadlineMs,
        what,
      }).then(() => seen);
    };

    const isDone = (e) => e.msg === 'all components running' || e.msg === 'apply finished' || e.msg?.startsWith?.('apply failed');
    /** From an agent's log: when it found `sha`, opened its gate, began and ended applying it (epoch ms; undefined: never). */
    const logOf = (a, sha) => {
      const at = (pred) => a.events.find(pred)?.t;
      const planIdx = a.events.findIndex((e) => e.msg === 'reconcile plan' && e.revision === sha);
      const done = planIdx >= 0 ? a.events.find((e, i) => i > planIdx && isDone(e)) : undefined;
      return {
        newRevision: at((e) => e.msg === 'new revision' && e.revision === sha),
        gateOpen: at((e) => e.msg === 'rollout gate open' && e.revision === sha),
        firstHeld: at((e) => e.revision === sha && typeof e.msg === 'string' && e.msg.startsWith('held: ')),
        halted: at((e) => e.revision === sha && typeof e.msg === 'string' && e.msg.startsWith('halted at ')),
        plan: planIdx >= 0 ? a.events[planIdx].t : undefined,
        done: done?.t,
        outcome: done?.msg,
        applyMs: planIdx >= 0 && done ? done.t - a.events[planIdx].t : undefined,
      };
    };
    const warningsOf = (list, since) => {
      const w = {};
      for (const e of list.flatMap((a) => a.events.filter((x) => x.level >= 40 && x.t >= since))) {
        const key = `${e.msg ?? `${e.component ?? ''} ${e.state ?? e.event ?? ''}`.trim()}${e.code ? ` (${e.code})` : ''}`;
        w[key] ??= { count: 0, example: String(e.err?.message ?? e.err ?? e.error ?? e.reason ?? '').slice(0, 200) };
        w[key].count++;
      }
      return w;
    };
    const stopFleet = async () => {
      await Promise.all(agents.map((a) => a.stop(15_000)));
      await h.killStragglers(agents.map((a) => a.pid), join(work, 'state-'));
      await h.killStragglers([], idle);
      agents = [];
    };

    // The request bodies of an agent's look and of its gate reads (a complete read: every bucket of each wave up to its
    // own, and the failures of the one commit held in each), to tell them apart in the server's log: both are protocol
    // v2 ls-refs POSTs to git-upload-pack. A commit id's length is all that matters to the size.
    const lookBody = lsRefsRequest(['refs/heads/main'], 'keystone').length;
    const completeRead = (waves) => waves.flatMap((x) => [...rolloutPrefixes([x.name]), failuresPrefix(x.name, '0'.repeat(40))]);
    const gateBodies = new Map(WAVES.map((w, k) => [lsRefsRequest(completeRead(WAVES.slice(0, k + 1)), 'keystone').length, w.name]));
    const kindOf = (r) => {
      const service = /service=(git-[a-z-]+)/.exec(r.query)?.[1] ?? /\/(git-[a-z-]+)$/.exec(r.path)?.[1];
      if (service === 'git-receive-pack') return 'report';
      if (service !== 'git-upload-pack') return 'other';
      if (r.protocol !== 'version=2') return 'fetch';
      if (r.method === 'POST' && r.received === lookBody) return 'look';
      if (r.method === 'POST' && gateBodies.has(r.received)) return 'gate';
      return 'v2-other';
    };
    const tally = (recs) => {
      const t = { requests: recs.length, bytesOut: 0, bytesIn: 0, byKind: {} };
      for (const r of recs) {
        t.bytesOut += r.bytes;
        t.bytesIn += r.received;
        const k = (t.byKind[kindOf(r)] ??= { requests: 0, bytesOut: 0, bytesIn: 0, gets: 0, non200: 0 });
        k.requests++;
        k.bytesOut += r.bytes;
        k.bytesIn += r.received;
        if (r.method === 'GET') k.gets++;
        if (r.status !== 200) k.non200++;
      }
      return t;
    };

    /** Body size of `GET info/refs?service=git-upload-pack` in protocol v1 (the advertisement a fetch starts with). */
    const advertBytes = (url) =>
      new Promise((resolve, reject) => {
        const req = get(`${url}/info/refs?service=git-upload-pack`, (res) => {
          let bytes = 0;
          res.on('data', (d) => (bytes += d.length));
          res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`GET info/refs: HTTP ${res.statusCode}`))));
        });
        req.on('error', reject);
      });

    /** One fleet: up on v1, then (a) a good commit, (b) a bad one, and with [rollout] (c) the cost of a held poll. */
    const runFleet = async (kind) => {
      const withRollout = kind === 'rollout';
      const repo = await makeRepo(`fleet-${kind}`, withRollout);
      const stateRoot = join(work, `state-${kind}`);
      mkdirSync(stateRoot, { recursive: true });
      chmodSync(stateRoot, 0o755);
      const r = { kind, n };
      const v1 = await repo.commit('good', '1.0.0');
      await repo.push();
      process.stderr.write(`${kind}: starting ${n} agents… `);
      const startedAt = epochNow();
      agents = devices.map((d) => startDevice(repo.url, d, join(stateRoot, d), `${keyPrefix}.pub`));
      const upSeen = await waitAllState(repo.bare, v1, 'success', 120_000 + 3_000 * n + (withRollout ? 3 * bakeMs : 0), `${kind}: the first commit`);
      r.allUpMs = round(Math.max(...upSeen.values()) - startedAt);
      // Every agent's success delivered (its POST answered) and nothing else under way before the measured push.
      await sleep(Math.max(1000, pollMs / 2));
      process.stderr.write(`all on ${v1.slice(0, 7)} after ${fmt(r.allUpMs / 1000, 1)} s. `);

      // (a) a good commit
      const good = await repo.commit('good', '1.0.1');
      const a0 = await mark();
      const goodPushed = await repo.push();
      process.stderr.write(`(a) pushed ${good.slice(0, 7)}… `);
      const goodSeen = await waitAllState(repo.bare, good, 'success', 120_000 + 4 * bakeMs + 1_000 * n, `${kind}: the good commit`);
      const a1 = await mark();
      const perDevice = agents.map((a) => ({ device: a.device, wave: waveOfDevice.get(a.device), reportedMs: goodSeen.get(a.device) - goodPushed, ...logOf(a, good) }));
      const applies = perDevice.map((d) => d.applyMs).filter(Number.isFinite);
      const reported = perDevice.map((d) => d.reportedMs);
      const aWin = tally(await records(a0, a1));
      r.good = {
        sha: good,
        allReportedMs: round(Math.max(...reported)),
        reportedP50Ms: round(median(reported)),
        applyMs: { p50: round(median(applies)), max: round(Math.max(...applies)) },
        window: { requests: aWin.requests, perDevice: round(aWin.requests / n, 1), bytesPerDevice: round((aWin.bytesIn + aWin.bytesOut) / n), byKind: aWin.byKind },
        byWave: withRollout
          ? WAVES.map((w) => {
              const ds = perDevice.filter((d) => d.wave === w.name);
              const rel = (k) => ds.map((d) => d[k] - goodPushed).filter(Number.isFinite);
              return {
                wave: w.name,
                devices: ds.length,
                gateOpenMs: { min: round(Math.min(...rel('gateOpen'))), max: round(Math.max(...rel('gateOpen'))) },
                reportedMs: { min: round(Math.min(...ds.map((d) => d.reportedMs))), max: round(Math.max(...ds.map((d) => d.reportedMs))) },
                heldDevices: ds.filter((d) => d.firstHeld !== undefined).length,
              };
            })
          : undefined,
        perDevice: perDevice.map((d) => ({ device: d.device, wave: d.wave, reportedMs: round(d.reportedMs), gateOpenMs: round(d.gateOpen - goodPushed), applyMs: round(d.applyMs) })),
      };
      process.stderr.write(`all reported after ${fmt(r.good.allReportedMs / 1000, 1)} s. `);
      await sleep(Math.max(1000, pollMs / 2));
      // What every fetch of the followed repository starts with (isomorphic-git fetches in protocol v1): its whole ref
      // advertisement, which holds the devices' notes refs and, with [rollout], their rollout refs.
      const refNames = (await git('-C', repo.bare, 'for-each-ref', '--format=%(refname)')).stdout.split('\n').filter(Boolean);
      r.advertisement = {
        uploadPackV1Bytes: await advertBytes(repo.url),
        refs: refNames.length,
        notesRefs: refNames.filter((x) => x.startsWith('refs/notes/')).length,
        rolloutRefs: refNames.filter((x) => x.startsWith('refs/keystone-rollout/')).length,
      };

      // (b) a bad commit
      const bad = await repo.commit('bad', '2.0.0');
      const b0 = await mark();
      const badPushed = await repo.push();
      process.stderr.write(`(b) pushed ${bad.slice(0, 7)}… `);
      let haltVisible;
      const reportedHalt = new Map();
      const failed = new Map();
      const outside = withRollout ? devices.filter((d) => waveOfDevice.get(d) !== WAVES[0].name) : [];
      await watch(repo.bare, {
        each: (notes, refs, t) => {
          for (const d of devices) {
            const s = notes.get(d);
            if (s?.commit !== bad) continue;
            if (s.state === 'failure' && !failed.has(d)) failed.set(d, t);
            if (s.state === 'error' && !reportedHalt.has(d)) reportedHalt.set(d, t);
          }
          if (withRollout && haltVisible === undefined) {
            const counts = waveCounts(rollout, refs, bad);
            if (counts.some((c) => waveHalted(c, abortPercent))) haltVisible = t;
          }
        },
        // With [rollout]: every device outside the canary said it is halted (and the canary's applies are over);
        // without: every device reported its failure.
        done: () => (withRollout ? outside.every((d) => reportedHalt.has(d)) : failed.size === n),
        deadlineMs: 120_000 + 4 * bakeMs + 1_000 * n,
        what: `${kind}: the bad commit`,
      });
      // The canary devices that applied it: let their applies end (their failure reports) before counting.
      await sleep(Math.max(2000, pollMs));
      const b1 = await mark();
      const badPer = agents.map((a) => ({ device: a.device, wave: waveOfDevice.get(a.device), ...logOf(a, bad) }));
      const appliedBad = badPer.filter((d) => d.plan !== undefined);
      const bWin = tally(await records(b0, b1));
      const badApplies = appliedBad.map((d) => d.applyMs).filter(Number.isFinite);
      r.bad = {
        sha: bad,
        applied: appliedBad.length,
        appliedByWave: Object.fromEntries(WAVES.map((w) => [w.name, appliedBad.filter((d) => d.wave === w.name).length])),
        failureReports: failed.size,
        applyMs: { p50: round(median(badApplies)), max: round(Math.max(...badApplies)) },
        haltVisibleMs: haltVisible !== undefined ? round(haltVisible - badPushed) : undefined,
        allHaltReportedMs: withRollout ? round(Math.max(...outside.map((d) => reportedHalt.get(d))) - badPushed) : undefined,
        allFailureReportedMs: !withRollout ? round(Math.max(...failed.values()) - badPushed) : undefined,
        firstFailureReportedMs: failed.size ? round(Math.min(...failed.values()) - badPushed) : undefined,
        // A device whose gate opened (its decision, on its read of the refs) after the bench saw the halt in the refs.
        appliedAfterHalt: withRollout && haltVisible !== undefined ? appliedBad.filter((d) => (d.gateOpen ?? d.plan) > haltVisible).map((d) => d.device) : [],
        perDevice: badPer
          .filter((d) => d.plan !== undefined || d.gateOpen !== undefined || d.halted !== undefined)
          .map((d) => ({
            device: d.device,
            wave: d.wave,
            newRevisionMs: round(d.newRevision - badPushed),
            gateOpenMs: round(d.gateOpen - badPushed),
            applyStartMs: round(d.plan - badPushed),
            applyMs: round(d.applyMs),
            haltedMs: round(d.halted - badPushed),
          })),
        window: { requests: bWin.requests, perDevice: round(bWin.requests / n, 1), byKind: bWin.byKind },
      };
      if (withRollout) {
        const st = await keystonectl('fleet', 'status', '--repo', repo.url, '--commit', bad, '--json').catch((e) => ({ stdout: '', error: e }));
        try {
          r.bad.fleetStatusHalted = JSON.parse(st.stdout).rollout?.halted ?? null;
        } catch {
          r.bad.fleetStatusHalted = `unreadable: ${String(st.error?.message ?? st.stdout).slice(0, 200)}`;
        }
      }
      process.stderr.write(`${r.bad.applied} applied it. `);

      // (c) the cost of a held poll: the canary stops; one more good commit; every other device holds it.
      if (withRollout) {
        const canary = agents.filter((a) => waveOfDevice.get(a.device) === WAVES[0].name);
        const held = agents.filter((a) => waveOfDevice.get(a.device) !== WAVES[0].name);
        await Promise.all(canary.map((a) => a.stop(15_000)));
        const c = await repo.commit('good', '1.0.2');
        await repo.push();
        process.stderr.write(`(c) canary stopped, pushed ${c.slice(0, 7)}… `);
        // Every held device has reported `held` (its rollout ref for c says so), and its report is answered.
        await watch(repo.bare, {
          done: (_notes, refs) => held.every((a) => refs.some((x) => x.device === a.device && x.commit === c && x.state === 'held')),
          deadlineMs: 60_000 + 1_000 * n,
          what: 'every device outside the canary to hold',
        });
        await sleep(1000);
        const c0 = await mark();
        const cStart = epochNow();
        await sleep(heldPolls * pollMs);
        const c1 = await mark();
        const cMs = epochNow() - cStart;
        const cWin = tally(await records(c0, c1));
        const polls = cMs / pollMs;
        const heldN = held.length;
        const k = (name) => cWin.byKind[name] ?? { requests: 0, bytesOut: 0, bytesIn: 0, gets: 0, non200: 0 };
        const stillHeld = held.filter((a) => !a.events.some((e) => e.msg === 'rollout gate open' && e.revision === c)).length;
        r.held = {
          sha: c,
          devices: heldN,
          stillHeldAtEnd: stillHeld,
          windowMs: round(cMs),
          polls: round(polls, 2),
          perDevicePerPoll: {
            requests: round(cWin.requests / heldN / polls, 2),
            bytesOut: round(cWin.bytesOut / heldN / polls),
            bytesIn: round(cWin.bytesIn / heldN / polls),
            looks: round(k('look').requests / heldN / polls, 2),
            gateReads: round(k('gate').requests / heldN / polls, 2),
            lookBytes: round((k('look').bytesOut + k('look').bytesIn) / Math.max(1, k('look').requests)),
            gateReadBytes: round((k('gate').bytesOut + k('gate').bytesIn) / Math.max(1, k('gate').requests)),
          },
          gets: cWin.requests ? Object.values(cWin.byKind).reduce((s, x) => s + x.gets, 0) : 0,
          byKind: cWin.byKind,
          heldReason: held[held.length - 1].events.filter((e) => e.revision === c && typeof e.msg === 'string' && e.msg.startsWith('held: ')).map((e) => e.msg).pop(),
        };
        process.stderr.write(`${fmt(r.held.perDevicePerPoll.requests, 2)} requests per held device per poll. `);
      }
      r.warnings = warningsOf(agents, startedAt);
      await stopFleet();
      process.stderr.write('stopped.\n');
      return r;
    };

    for (const kind of fleets) results.fleets[kind] = await runFleet(kind);

    // (c') synthetic reads at scale: the same fleet's rollout refs unsigned (as agents before issue 29 wrote them, and
    // no devices/) and signed (each device's key, each device enrolled in devices/), read by the same gate with the
    // same seeded sample; the signed refs are counted only once each verifies against its device's certificate.
    const synthetic = [];
    if (synthSizes.length) {
      const base = join(work, 'srv', 'synth-base.git');
      await git('init', '--quiet', '--bare', '--initial-branch=main', base);
      const seedWs = join(work, 'ws-synth');
      await git('init', '--quiet', '--initial-branch=main', seedWs);
      await git('-C', seedWs, 'commit', '--quiet', '--allow-empty', '-m', 'one existing commit');
      await git('-C', seedWs, 'push', '--quiet', base, 'HEAD:refs/heads/main');
      const oid = (await git('-C', base, 'rev-parse', 'refs/heads/main')).stdout.trim();
      const OLD = 'a'.repeat(40);
      const NEW = 'b'.repeat(40);
      // The new commit's state on a device: a stable mix (by a hash of its name) of a rollout under way.
      const STATES = [
        ['success', 40],
        ['applying', 10],
        ['held', 50],
      ];
      const stateOf = (d) => {
        let x = waveHash(`state\0${d}`);
        for (const [s, p] of STATES) if ((x -= p) < 0) return s;
        return 'held';
      };
      const identity = verifyReaders.length ? await syntheticIdentities() : undefined;
      /** A bare repository on the server holding `lines` (ref names, sorted here) as a packed-refs file, each at `oid`. */
      const writeRefs = async (name, lines) => {
        const bare = join(work, 'srv', `${name}.git`);
        await git('clone', '--quiet', '--bare', base, bare);
        lines.push('refs/heads/main');
        lines.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
        writeFileSync(join(bare, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${lines.map((ref) => `${oid} ${ref}\n`).join('')}`);
        rmSync(join(bare, 'refs', 'heads', 'main'), { force: true });
        return bare;
      };
      /**
       * Four gate decisions from a fresh gate (a newly started device of the last wave), over `name` on the server, with
       * the bucket sample drawn from `seed` (the same for every variant of one size); `admission`: the held commit's
       * (report-admission.ts), as take-revision.ts makes it once per held commit and the gate reuses it.
       */
      const gateReads = async (name, seed, admission, count = 4) => {
        const lister = refListerFor(`http://127.0.0.1:${port}/${name}.git`);
        const listings = [];
        const refs = {
          list: async (prefixes, o) => {
            const m0 = await mark();
            const t = performance.now();
            try {
              const l = await lister.list(prefixes, o);
              listings.push({ prefixes: prefixes.length, refs: l.refs.length, requests: l.requests, bytes: l.bytes, ms: performance.now() - t, m0, m1: await mark() });
              return l;
            } catch (e) {
              listings.push({ prefixes: prefixes.length, error: `${e.code ?? ''} ${e.message}`.trim(), ms: performance.now() - t, m0, m1: await mark() });
              throw e;
            }
          },
        };
        const seen = new Map();
        const store = {
          firstSuccessSeen: (rev, key) => seen.get(`${rev}\0${key}`),
          recordFirstSuccess: (rev, key, at) => seen.has(`${rev}\0${key}`) || seen.set(`${rev}\0${key}`, at),
          goodState: () => undefined,
        };
        // What each decision's admission did: reports verified and counted, refused (with the verdicts), its time.
        let admitted;
        const counting = admission && {
          requireEnrolled: admission.requireEnrolled,
          admit: async (reports) => {
            const t = performance.now();
            const a = await admission.admit(reports);
            const verdicts = {};
            for (const x of a.refused) verdicts[x.verification.verdict] = (verdicts[x.verification.verdict] ?? 0) + 1;
            admitted = { counted: a.counted.length, refused: a.refused.length, verdicts, ms: performance.now() - t };
            return a;
          },
        };
        const gate = new RolloutGate({ refs, store, now: Date.now, random: h.mulberry32(seed) });
        const candidate = { commit: NEW, rollout, wave: WAVES.length - 1, state: { components: [] }, ...(counting && { admission: counting }) };
        const reads = [];
        for (let i = 0; i < count; i++) {
          admitted = undefined;
          globalThis.gc?.();
          const t = performance.now();
          const d = await gate.decide([candidate]);
          const decideMs = performance.now() - t;
          const l = listings[listings.length - 1];
          const recs = await records(l.m0, l.m1);
          reads.push({
            read: i + 1,
            sampled: 'error' in d ? undefined : !d.complete,
            decision: 'error' in d ? `error: ${d.error.message.slice(0, 160)}` : d.decisions.get(NEW).reason,
            prefixes: l.prefixes,
            refs: l.refs,
            listerRequests: l.requests,
            listerBytes: l.bytes,
            serverRequests: recs.length,
            serverBytesOut: recs.reduce((s, x) => s + x.bytes, 0),
            serverBytesIn: recs.reduce((s, x) => s + x.received, 0),
            // The listing alone (as this bench measured a read before issue 29), and the whole decision: the listing,
            // parsing the refs, verifying the reports against their devices' certificates, the gate itself.
            ms: round(l.ms),
            decideMs: round(decideMs),
            ...(admitted && { verify: { counted: admitted.counted, refused: admitted.refused, verdicts: admitted.verdicts, ms: round(admitted.ms) } }),
            error: l.error,
          });
        }
        return reads;
      };
      for (const size of synthSizes) {
        const t0 = performance.now();
        const devs = [];
        const perWave = Object.fromEntries(WAVES.map((w) => [w.name, 0]));
        for (let i = 1; i <= size; i++) {
          const d = `dev-${String(i).padStart(6, '0')}`;
          const wave = waveOf(rollout, d, {}).wave.name;
          devs.push({ d, wave, s: stateOf(d) });
          perWave[wave]++;
        }
        const reportsOf = ({ d, wave, s }) => [{ wave, device: d, commit: NEW, state: s }, ...(s !== 'success' ? [{ wave, device: d, commit: OLD, state: 'success' }] : [])];
        const name = `synth-${size}`;
        const bare = await writeRefs(name, devs.flatMap((x) => reportsOf(x).map((r) => rolloutRef(r))));
        const writeMs = performance.now() - t0;
        const refsTotal = devs.reduce((n, x) => n + reportsOf(x).length, 0);
        // What a device of the last wave reads: the waves before it and its own, whole, in each read.
        const readable = (await git('-C', bare, 'for-each-ref', '--format=%(refname)', ...WAVES.map((w) => `refs/keystone-rollout/${w.name}/`))).stdout.split('\n').filter(Boolean).length;
        const seed = 0x5eed ^ size;
        const variants = [{ variant: 'unsigned', reads: await gateReads(name, seed) }];
        rmSync(bare, { recursive: true, force: true });
        process.stderr.write(`synthetic ${fmt(size)} devices, unsigned: ${variants[0].reads.map((x) => (x.error ? `read ${x.read} failed` : `read ${x.read} ${fmt(x.refs)} refs ${fmt(x.serverBytesOut)} B ${fmt(x.decideMs)} ms`)).join(', ')}\n`);
        let signedSetup;
        if (identity) {
          // Every device: a key pair, its certificate (devices/<name>.cert, signed by the enrolment key) and its refs
          // signed with its key (each name ends `.<key id><signature>`).
          const t1 = performance.now();
          const certs = [];
          const lines = [];
          for (const [i, x] of devs.entries()) {
            const key = identity.deviceKey();
            certs.push(identity.certificate(x.d, key));
            const signer = reportSigner(key);
            for (const r of reportsOf(x)) lines.push(rolloutRef(r, signer));
            if ((i + 1) % 10_000 === 0) process.stderr.write(`  ${fmt(i + 1)} devices enrolled and signed (${fmt((performance.now() - t1) / 1000, 1)} s)\n`);
          }
          const signMs = performance.now() - t1;
          const signedName = `${name}-signed`;
          const signedBare = await writeRefs(signedName, lines);
          const meanRef = round(lines.reduce((n, l) => n + l.length, 0) / lines.length, 1);
          signedSetup = { signMs: round(signMs), certificateBytes: round(certs.reduce((n, c) => n + c.length, 0) / certs.length), refNameChars: meanRef };
          for (const kindOfReader of verifyReaders) {
            const t2 = performance.now();
            const reader = kindOfReader === 'dir' ? identity.directoryOf(join(work, `synth-dir-${size}`), devs, certs) : await identity.gitCacheOf(join(work, `synth-cache-${size}.git`), devs, certs);
            const readerSetupMs = performance.now() - t2;
            const admission = await reportAdmission({ raw: reader.reader, signed: reader.reader, rollout, enrollmentKeys: [identity.enrollmentPublic], now: Date.now });
            const count = kindOfReader === 'git' && size > gitReaderUpTo ? 1 : 4;
            const reads = await gateReads(signedName, seed, admission, count);
            variants.push({ variant: `signed, verified (${kindOfReader === 'dir' ? 'devices/ in a directory' : "devices/ in a Git cache"})`, reader: kindOfReader, readerSetupMs: round(readerSetupMs), ...reader.info, reads });
            reader.remove();
            process.stderr.write(
              `synthetic ${fmt(size)} devices, signed (${kindOfReader}): ${reads.map((x) => (x.error ? `read ${x.read} failed` : `read ${x.read} ${fmt(x.refs)} refs ${fmt(x.serverBytesOut)} B ${fmt(x.decideMs)} ms${x.verify ? ` (${x.verify.counted} counted, ${x.verify.refused} refused)` : ''}`)).join(', ')}\n`,
            );
          }
          rmSync(signedBare, { recursive: true, force: true });
        }
        synthetic.push({
          devices: size,
          refs: refsTotal,
          refsPerDevice: round(refsTotal / size, 2),
          devicesPerWave: perWave,
          refsReadableByLastWave: readable,
          writeMs: round(writeMs),
          seed,
          ...(signedSetup && { signedSetup }),
          // Kept at the top level too: the unsigned reads, as before issue 29.
          reads: variants[0].reads,
          variants,
        });
      }
    }
    results.synthetic = synthetic;
    const loadAfter = h.load1();
    const othersPercent = others.percent();

    // ─── the report ───
    const R = results.fleets.rollout;
    const P = results.fleets.plain;
    console.log(
      `\nrollout benchmark — node ${process.version}, ${cpus().length} × ${h.machine().cpu.model ?? 'cpu'}; N = ${n} real agents, --poll ${opts.poll} (±10 %), ` +
        `one idle component, signed, git-notes reports to the followed repository`,
    );
    console.log(`[rollout] waves canary 10, early 40, everyone 100 (by name hash): ${WAVES.map((w) => `${w.name} ${members[w.name].length}`).join(', ')} devices; bake ${opts.bake}, min_success ${minSuccess}, abort_failure_percent ${abortPercent}`);
    const L = 52;
    const W = 18;
    const row = (label, a, b, ref = '') => console.log(`${label.padEnd(L)} ${String(a).padStart(W)} ${String(b).padStart(W)}  ${ref}`);
    const s = (ms) => (Number.isFinite(ms) ? `${fmt(ms / 1000, 1)} s` : '—');
    console.log(`\n${'measure'.padEnd(L)} ${'with [rollout]'.padStart(W)} ${'without'.padStart(W)}  reference`);
    if (R || P) {
      const floorR = R ? pollMs + R.good.applyMs.max + 2 * bakeMs : NaN;
      const floorP = P ? pollMs + P.good.applyMs.max : NaN;
      if (R) R.good.floorMs = floorR;
      if (P) P.good.floorMs = floorP;
      row('fleet up on the first commit (untimed warm-up)', s(R?.allUpMs), s(P?.allUpMs), R ? 'with [rollout] it walks the waves too' : '');
      row('(a) good commit: push → all reported success', s(R?.good.allReportedMs), s(P?.good.allReportedMs), `ratio ${ratio(R?.good.allReportedMs, P?.good.allReportedMs)}`);
      row('    floor: poll + slowest apply (+ two bakes)', s(floorR), s(floorP), `÷ floor: ${ratio(R?.good.allReportedMs, floorR)} / ${ratio(P?.good.allReportedMs, floorP)}`);
      row('    push → device reported, p50', s(R?.good.reportedP50Ms), s(P?.good.reportedP50Ms), '');
      row('    apply p50 / max', R ? `${fmt(R.good.applyMs.p50)} / ${fmt(R.good.applyMs.max)} ms` : '—', P ? `${fmt(P.good.applyMs.p50)} / ${fmt(P.good.applyMs.max)} ms` : '—', '');
      row('    requests / device, push → all reported', R ? fmt(R.good.window.perDevice, 1) : '—', P ? fmt(P.good.window.perDevice, 1) : '—', R && P ? `the longer window polls more: ${ratio(R.good.window.perDevice, P.good.window.perDevice)}` : '');
      if (R)
        for (const w of R.good.byWave)
          row(`    ${w.wave} (${w.devices}): gate open / reported, max`, `${s(w.gateOpenMs.max)} / ${s(w.reportedMs.max)}`, '', w.wave === WAVES[0].name ? 'goes first' : `held first: ${w.heldDevices} of ${w.devices}`);
      row(
        '    a fetch\'s advertisement (v1), after (a)',
        R ? `${fmt(R.advertisement.uploadPackV1Bytes)} B` : '—',
        P ? `${fmt(P.advertisement.uploadPackV1Bytes)} B` : '—',
        R ? `refs in the followed repository: ${R.advertisement.refs} (${R.advertisement.notesRefs} notes, ${R.advertisement.rolloutRefs} rollout) / ${P?.advertisement.refs ?? '—'}` : '',
      );
      row('(b) bad commit: devices that applied it', R ? `${R.bad.applied} of ${n}` : '—', P ? `${P.bad.applied} of ${n}` : '—', R ? `aim: the canary only (${members.canary.length}); by wave ${Object.entries(R.bad.appliedByWave).map(([w, c]) => `${w} ${c}`).join(', ')}; gate opened after the halt was visible: ${R.bad.appliedAfterHalt.length}` : '');
      row('    push → halt visible (a wave past abort %)', s(R?.bad.haltVisibleMs), '', R ? `fleet status --json rollout.halted: ${JSON.stringify(R.bad.fleetStatusHalted)}` : '');
      row('    push → all outside the canary reported halt', s(R?.bad.allHaltReportedMs), '', R ? `poll + failed apply (max ${fmt(R.bad.applyMs.max)} ms) + poll = ${s(2 * pollMs + R.bad.applyMs.max)}: ${ratio(R.bad.allHaltReportedMs, 2 * pollMs + R.bad.applyMs.max)}` : '');
      row('    push → all failure reports', '', s(P?.bad.allFailureReportedMs), P ? `${P.bad.failureReports} failure reports; poll + failed apply = ${s(pollMs + P.bad.applyMs.max)}` : '');
      if (R?.held) {
        const x = R.held.perDevicePerPoll;
        row('(c) held at a gate: requests / device / poll', fmt(x.requests, 2), '', `aim ≤ 2: ${x.requests <= 2.05 ? 'met' : 'MISSED'}; looks ${fmt(x.looks, 2)} + gate reads ${fmt(x.gateReads, 2)}; GETs ${R.held.gets}`);
        row('    bytes out + in / device / poll', `${fmt(x.bytesOut)} + ${fmt(x.bytesIn)}`, '', `a look ${fmt(x.lookBytes)} B, a gate read ${fmt(x.gateReadBytes)} B (${R.held.devices} held devices, ${fmt(R.held.polls, 1)} polls, ${R.held.stillHeldAtEnd} still held at the end)`);
      }
    }
    if (synthetic.length) {
      console.log(
        `\n(c') one gate decision as a device of the last wave makes it (RolloutGate + refListerFor, over the same server), four times from a fresh start, ` +
          `the same seeded bucket sample for each variant; aim ~100 KB per read; signed: each ref name carries its device's signature and is counted once it ` +
          `verifies against devices/<name>.cert (report-admission.ts; one admission per held commit, reused by every read); ms = the listing alone, ` +
          `decision = listing + parsing + verification + the gate`,
      );
      console.log(
        `${'devices'.padStart(9)} ${'variant'.padEnd(10)} ${'read'.padEnd(4)} ${'sampled'.padEnd(7)} ${'refs read'.padStart(9)} ${'req'.padStart(3)} ${'bytes received'.padStart(14)} ${'÷ 100 KB'.padStart(8)} ${'÷ unsigned'.padStart(10)} ${'ms'.padStart(6)} ${'decision ms'.padStart(11)} ${'÷ unsigned'.padStart(10)} ${'verified'.padStart(8)}  decision`,
      );
      const short = (v) => (v.reader ? `signed/${v.reader}` : v.variant);
      for (const x of synthetic)
        for (const v of x.variants)
          for (const rd of v.reads) {
            const u = x.variants[0].reads[rd.read - 1];
            console.log(
              `${fmt(x.devices).padStart(9)} ${short(v).padEnd(10)} ${String(rd.read).padEnd(4)} ${String(rd.sampled ?? '—').padEnd(7)} ${(rd.error ? '—' : fmt(rd.refs)).padStart(9)} ${String(rd.serverRequests).padStart(3)} ${fmt(rd.serverBytesOut).padStart(14)} ${ratio(rd.serverBytesOut, 100_000).padStart(8)} ${(v === x.variants[0] ? '' : ratio(rd.serverBytesOut, u?.serverBytesOut)).padStart(10)} ${fmt(rd.ms).padStart(6)} ${fmt(rd.decideMs).padStart(11)} ${(v === x.variants[0] ? '' : ratio(rd.decideMs, u?.decideMs)).padStart(10)} ${(rd.verify ? `${rd.verify.counted}/${rd.verify.counted + rd.verify.refused}` : '').padStart(8)}  ${rd.decision}`,
            );
          }
      // The sampled read of each size once sized: the last.
      const sampledOf = (x) => x.reads.filter((rd) => !rd.error && rd.sampled).pop();
      const withSample = synthetic.filter(sampledOf);
      if (withSample.length > 1) {
        const a = withSample[0];
        const b = withSample[withSample.length - 1];
        console.log(
          `sampled read (unsigned), ${fmt(b.devices)} ÷ ${fmt(a.devices)} devices: requests ${ratio(sampledOf(b).serverRequests, sampledOf(a).serverRequests)}, ` +
            `bytes ${ratio(sampledOf(b).serverBytesOut, sampledOf(a).serverBytesOut)} (the fleet ×${fmt(b.devices / a.devices)})`,
        );
      }
      // Signed + verified ÷ unsigned: the last read each variant made (sized, when it made four), aim ≤ 2 for the decision.
      if (synthetic.some((x) => x.variants.length > 1)) {
        console.log(`\nsigned + verified ÷ unsigned, the last read of each (aim: the decision within ×2):`);
        for (const x of synthetic)
          for (const v of x.variants.slice(1)) {
            const rd = v.reads[v.reads.length - 1];
            const u = x.variants[0].reads[rd.read - 1];
            const verify = rd.verify ? `${rd.verify.counted} of ${rd.verify.counted + rd.verify.refused} reports verified${rd.verify.refused ? ` (refused: ${JSON.stringify(rd.verify.verdicts)})` : ''}, admission ${fmt(rd.verify.ms)} ms` : '';
            console.log(
              `${fmt(x.devices).padStart(9)} ${short(v).padEnd(10)} read ${rd.read}: bytes ${fmt(rd.serverBytesOut)} / ${fmt(u.serverBytesOut)} = ${ratio(rd.serverBytesOut, u.serverBytesOut)}; ` +
                `listing ${fmt(rd.ms)} / ${fmt(u.ms)} ms = ${ratio(rd.ms, u.ms)}; decision ${fmt(rd.decideMs)} / ${fmt(u.decideMs)} ms = ${ratio(rd.decideMs, u.decideMs)} ` +
                `(aim ×2: ${rd.decideMs <= 2 * u.decideMs ? 'met' : 'MISSED'}); ${verify}${v.packBytes ? `; devices/ pack ${fmt(v.packBytes)} B, tree ${fmt(v.devicesTreeBytes)} B` : ''}`,
            );
          }
        for (const x of synthetic) if (x.variants.some((v) => v.reader === 'git' && v.reads.length === 1)) console.log(`${fmt(x.devices)} devices, signed/git: one read only (--git-reader-up-to ${gitReaderUpTo})`);
      }
      for (const x of synthetic)
        if (x.reads[0].error)
          console.log(
            `${fmt(x.devices)} devices: the first read failed (${x.reads[0].error})`,
          );
    }
    for (const [kind, f] of Object.entries(results.fleets))
      for (const [w, { count, example }] of Object.entries(f.warnings))
        if (!w.startsWith('cannot list this agent\'s containers')) console.log(`warning: ${kind}: agents logged "${w}" ${count} time(s)${example ? `, e.g. ${example}` : ''}`);
    const note = h.busyNote(othersPercent, loadBefore, loadAfter);
    if (note) console.log(note);

    h.ensureDir(join(benchDir, 'results'));
    writeFileSync(
      resultsFile,
      JSON.stringify(
        {
          ...h.resultsHead('rollout', { loadBefore, loadAfter, othersPercent, withGit: true }),
          devices: n,
          pollMs,
          bakeMs,
          rollout: { waves: WAVES, bake: opts.bake, minSuccess, abortFailurePercent: abortPercent, members: Object.fromEntries(Object.entries(members).map(([w, ds]) => [w, ds.length])) },
          command: `keystone agent --repo http://127.0.0.1:PORT/fleet-KIND.git --ref main --device dev-NNN --poll ${opts.poll} --trusted-key K.pub --status git-notes --listen none --state-dir FRESH --log-format json --stop-on-exit`,
          references: {
            good: 'with [rollout]: poll + slowest apply + 2 × bake (the floor); without: poll + slowest apply; and the two fleets against each other',
            bad: 'with [rollout]: the canary only applies it; halt reported by every other device within poll + failed apply + poll',
            held: 'requests per held device per poll ≤ 2 (a look and a gate read)',
            synthetic: '~100 KB per gate read, not growing with the fleet beyond the sample',
            syntheticSigned: 'signed refs + verification against devices/ certificates ÷ unsigned refs without devices/, same sample: the decision within ×2',
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
    for (const a of agents) if (!a.exit) h.signalGroup(a.pid, 'SIGKILL');
    await server.stop();
    await h.killStragglers([], work);
    rmWork();
  }
}

/**
 * Device identities for the synthetic reads (SPEC §15), made in this process: an enrolment key, a key pair per device,
 * its certificate by `signCertificate` (dist/identity/certificate.js), and the devices/ directory a gate's admission
 * reads them from, as a plain directory (DirectoryReader) or as a commit in a bare Git repository whose objects are in
 * one pack, as an agent's cache holds a fetched commit (GitTreeReader, the reader report-admission gets on a device).
 *
 * Signing speed only: signCertificate signs with tweetnacl's pure JavaScript Ed25519 (~4 ms a signature, two per
 * certificate: ~15 minutes for 100,000 certificates on this machine). Ed25519 signatures are deterministic, so
 * tweetnacl's `sign.detached` is swapped, in this process only, for Node's crypto over the same key, after checking
 * that both give the same bytes; verification (what is measured) is the product's own, untouched.
 */
async function syntheticIdentities() {
  const { createPrivateKey, createPublicKey, randomBytes, sign: cryptoSign } = await import('node:crypto');
  const { mkdirSync, rmSync, writeFileSync } = await import('node:fs');
  const { spawnSync } = await import('node:child_process');
  const { join } = await import('node:path');
  const nacl = (await import('tweetnacl')).default;
  const { generateKey } = await import('../dist/trust/minisign.js');
  const { signCertificate, reportKeyLine } = await import('../dist/identity/certificate.js');
  const { DirectoryReader } = await import('../dist/source/directory-reader.js');
  const { GitTreeReader } = await import('../dist/source/git-tree-reader.js');
  const { BENCH_GIT_ENV } = await import('./harness.mjs');
  const PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
  const enrollment = generateKey((n) => new Uint8Array(randomBytes(n)));
  const original = nacl.sign.detached;
  const keyObjects = new Map();
  const fast = (message, secretKey) => {
    const seed = Buffer.from(secretKey.subarray(0, 32));
    const id = seed.toString('hex');
    let k = keyObjects.get(id);
    if (!k) keyObjects.set(id, (k = createPrivateKey({ key: Buffer.concat([PKCS8, seed]), format: 'der', type: 'pkcs8' })));
    return new Uint8Array(cryptoSign(null, Buffer.from(message), k));
  };
  const probe = randomBytes(97);
  if (!Buffer.from(original(probe, enrollment.secretKey)).equals(Buffer.from(fast(probe, enrollment.secretKey)))) throw new Error("Node's Ed25519 and tweetnacl's disagree: not swapping");
  nacl.sign.detached = fast;
  const AGE = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';
  const issuedAt = Date.now() - 60_000;
  return {
    enrollmentPublic: { keyId: enrollment.keyId, publicKey: enrollment.publicKey },
    /** A device's report key, as ensureDeviceKeys makes one (minisign's layout: seed ‖ public key, a random key id). */
    // (Not generateKeyPairSync + a JWK export: on Node 20, tens of thousands of those deadlocked this process, a
    // collected KeyGenJob's destructor waiting on a mutex the export held.)
    deviceKey() {
      const seed = randomBytes(32);
      const pub = createPublicKey(createPrivateKey({ key: Buffer.concat([PKCS8, seed]), format: 'der', type: 'pkcs8' }))
        .export({ format: 'der', type: 'spki' })
        .subarray(-32);
      return { keyId: new Uint8Array(randomBytes(8)), secretKey: new Uint8Array(Buffer.concat([seed, pub])), publicKey: new Uint8Array(pub) };
    },
    certificate: (device, key) => signCertificate({ device, reportKey: reportKeyLine(key), ageRecipient: AGE, labels: {}, issuedAt }, enrollment),
    /** devices/<name>.cert for every device, in a plain directory. */
    directoryOf(dir, devs, certs) {
      mkdirSync(join(dir, 'devices'), { recursive: true });
      for (let i = 0; i < devs.length; i++) writeFileSync(join(dir, 'devices', `${devs[i].d}.cert`), certs[i]);
      return { reader: new DirectoryReader(dir), info: { files: devs.length }, remove: () => rmSync(dir, { recursive: true, force: true }) };
    },
    /** One commit whose tree is devices/<name>.cert for every device, written by `git fast-import` (one pack). */
    async gitCacheOf(gitdir, devs, certs) {
      const init = spawnSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitdir], { env: BENCH_GIT_ENV });
      if (init.status !== 0) throw new Error(`git init: ${init.stderr}`);
      const parts = [Buffer.from('commit refs/heads/main\ncommitter Bench <bench@keystone.invalid> 1796378400 +0000\ndata 8\nenrolled\n')];
      for (let i = 0; i < devs.length; i++) {
        const b = Buffer.from(certs[i]);
        parts.push(Buffer.from(`M 100644 inline devices/${devs[i].d}.cert\ndata ${b.length}\n`), b, Buffer.from('\n'));
      }
      const r = spawnSync('git', ['-C', gitdir, 'fast-import', '--quiet'], { input: Buffer.concat(parts), env: BENCH_GIT_ENV, maxBuffer: 64 * 1024 * 1024 });
      if (r.status !== 0) throw new Error(`git fast-import: ${r.stderr}`);
      const commit = spawnSync('git', ['-C', gitdir, 'rev-parse', 'refs/heads/main'], { env: BENCH_GIT_ENV, encoding: 'utf8' }).stdout.trim();
      const packs = spawnSync('sh', ['-c', `du -b ${gitdir}/objects/pack/*.pack | awk '{s+=$1} END {print s}'`], { encoding: 'utf8' }).stdout.trim();
      const tree = spawnSync('git', ['-C', gitdir, 'cat-file', '-s', 'refs/heads/main:devices'], { env: BENCH_GIT_ENV, encoding: 'utf8' }).stdout.trim();
      return {
        reader: new GitTreeReader({ gitdir }, commit, 'main'),
        info: { packBytes: Number(packs), devicesTreeBytes: Number(tree) },
        remove: () => rmSync(gitdir, { recursive: true, force: true }),
      };
    },
  };
}
