// Benchmark of a fleet following one repository (issue 14): what N real agents cost the Git host while they poll and
// when one commit reaches them all, and whether that cost per device stays flat as N grows. Run by hand (`npm run
// bench -- fleet`, which builds first); it asserts nothing, it reports.
//
// The fleet repository: one component (an idle process, a copy of `sleep` under the run's work directory so that
// the clean-up finds it by path; no health check), signed with a key made by `keystonectl keygen` (`keystonectl
// sign` before every commit, untimed). It is served over smart HTTP by the project's loopback server
// (src/dev/git-http-server.ts: real `git http-backend`, every request recorded with method, path, query, status,
// bytes) in a child process (counted-git-server.mjs), and N real agents follow it, each a child process in its own
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
// Printed per N with the modes side by side, then per mode: per-device cost at the largest N ÷ at the smallest (aim
// ≤ 1.1, flat), the followed repository's part (look, fetch) apart from the reports';
// time to all reported against one poll interval + the apply time (aim: within 10 s at N = 50).
//
// Options: --sizes 10,25,50  --reports same|separate|both (default both)  --poll 5s  --quiet 2 (poll intervals)
//          --port-base 31700 (the agents' API ports, port-base…port-base+N−1; keep below 32768, the ephemeral range)
import { chmodSync, copyFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { openFleetBench } from './counted-git-server.mjs';


await main();

// ─── the benchmark ──────────────────────────────────────────────────────────────────────────────────────────

async function main() {
  const { parseDuration } = await import('../dist/core/duration.js');
  const h = await import('./harness.mjs');
  const { benchDir, epochNow, fmt, median, ratio, round, sleep } = h;
  const { values: opts } = parseArgs({
    args: process.argv.slice(2),
    options: {
      sizes: { type: 'string', default: '10,25,50' },
      reports: { type: 'string', default: 'both' },
      poll: { type: 'string', default: '5s' },
      quiet: { type: 'string', default: '2' },
      'port-base': { type: 'string', default: '31700' },
    },
  });
  const sizes = opts.sizes.split(',').map((s) => Number(s.trim()));
  const pollMs = parseDuration(opts.poll);
  const quietPolls = Number(opts.quiet);
  const portBase = Number(opts['port-base']);
  const modes = opts.reports === 'both' ? ['same', 'separate'] : [opts.reports];
  if (
    !['same', 'separate', 'both'].includes(opts.reports) ||
    sizes.length === 0 ||
    sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 999) ||
    !(pollMs >= 1000) ||
    !(quietPolls >= 1) ||
    !Number.isInteger(portBase) ||
    portBase < 1024 ||
    portBase + Math.max(...sizes) >= 32768
  ) {
    console.error('usage: node bench/fleet.bench.mjs [--sizes 10,25,50] [--reports same|separate|both] [--poll 5s] [--quiet 2] [--port-base 31700]');
    process.exit(2);
  }
  const resultsFile = join(benchDir, 'results', 'fleet.json');

  const { run, git, keystonectl, work, rmWork, others, loadBefore, tStart, server } = await openFleetBench('fleet');
  const serverPort = server.port;
  const { mark, records } = server;
  let agents = [];

  try {
    // The idle program: `sleep` copied under the work directory, so that killStragglers(work) finds it by path.
    h.ensureDir(join(work, 'bin'));
    chmodSync(join(work, 'bin'), 0o755);
    const idle = join(work, 'bin', 'idle-sleep');
    copyFileSync((await run('sh', ['-c', 'command -v sleep'])).stdout.trim(), idle);
    chmodSync(idle, 0o755);

    // The repository: a work tree that commits and pushes to each N's bare repository on disk.
    const ws = join(work, 'ws');
    await git('init', '--quiet', '--initial-branch=main', ws);
    h.ensureDir(join(ws, 'recipes'));
    h.ensureDir(join(ws, 'plans'));
    const recipeFile = join(ws, 'recipes', 'com.bench.idle.toml');
    const writeRecipe = (version) =>
      writeFileSync(
        recipeFile,
        [
          '# Benchmark idle component: one process that does nothing, no health check.',
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
        ].join('\n'),
      );
    writeRecipe('1.0.0');
    writeFileSync(join(ws, 'plans', 'idle.toml'), '# Generated by bench/fleet.bench.mjs.\n\n[[components]]\nname = "idle"\nrecipe = "recipes/com.bench.idle.toml"\n');
    h.ensureDir(join(work, 'keys'));
    const keyPrefix = join(work, 'keys', 'bench');
    await keystonectl('keygen', '--out', keyPrefix, '--no-password');
    let version = 0;
    const commit = async (message) => {
      await keystonectl('sign', '--key', `${keyPrefix}.key`, '--repo', ws);
      await git('-C', ws, 'add', '-A');
      await git('-C', ws, 'commit', '--quiet', '-m', message);
      return (await git('-C', ws, 'rev-parse', 'HEAD')).stdout.trim();
    };
    await commit('the fleet: one idle component');
    const port = await serverPort;

    /** Every device's notes ref on the server: device → { oid, state, commit } (from the notes commit's subject). */
    const readNotes = async (bare) => {
      const out = (await git('-C', bare, 'for-each-ref', '--format=%(refname) %(objectname) %(contents:subject)', 'refs/notes/keystone-devices/')).stdout;
      const notes = new Map();
      for (const line of out.split('\n')) {
        const m = /^refs\/notes\/keystone-devices\/(\S+) ([0-9a-f]+) keystone\/\S+: (\S+) ([0-9a-f]{40})$/.exec(line);
        if (m) notes.set(decodeURIComponent(m[1]), { oid: m[2], state: m[3], commit: m[4] });
      }
      return notes;
    };
    /**
     * Polls the bare repository every ~200 ms until every device's ref says `success` for `sha` (deadline); returns
     * device → epoch ms when the bench first saw it (and the pending note, when seen before).
     */
    const waitForSuccess = async (bare, devices, sha, deadlineMs, what) => {
      const seen = new Map();
      const pendingSeen = new Map();
      const until = epochNow() + deadlineMs;
      for (;;) {
        const notes = await readNotes(bare);
        const t = epochNow();
        for (const d of devices) {
          const n = notes.get(d);
          if (n?.commit !== sha) continue;
          if (n.state === 'pending' && !pendingSeen.has(d)) pendingSeen.set(d, t);
          if (n.state === 'success' && !seen.has(d)) seen.set(d, t);
          if (n.state === 'failure' || n.state === 'error') throw new Error(`${d} reported ${n.state} for ${sha.slice(0, 7)}`);
        }
        if (seen.size === devices.length) return { seen, pendingSeen };
        if (t > until) {
          const missing = devices.filter((d) => !seen.has(d));
          const exited = agents.filter((a) => a.exit).map((a) => `${a.device}: ${a.stderr.slice(-300)}`);
          throw new Error(`${what}: ${missing.length} device(s) without a success note after ${fmt(deadlineMs)} ms (${missing.slice(0, 5).join(', ')}…)${exited.length ? `; exited: ${exited.join(' | ')}` : ''}`);
        }
        await sleep(200);
      }
    };

    /**
     * What a record is: a poll's look (protocol v2 upload-pack: the ls-refs POST, and on an agent's first look the
     * capabilities GET before it), a fetch (v1 upload-pack: advertisement GET, pack POST) or a report (receive-pack:
     * the POST, and the advertisement GET only after a push refused as stale).
     */
    const kindOf = (r) => {
      const service = /service=(git-[a-z-]+)/.exec(r.query)?.[1] ?? /\/(git-[a-z-]+)$/.exec(r.path)?.[1];
      // Anything asked of a reports repository is reporting (a reporter fetches its ref back after a refused push).
      if (service === 'git-receive-pack' || /\/reports-\d+\.git\//.test(r.path)) return 'report';
      if (service === 'git-upload-pack') return r.protocol === 'version=2' ? 'look' : 'fetch';
      return 'other';
    };
    const isAdvert = (r) => r.method === 'GET' && /\/info\/refs$/.test(r.path);
    const tally = (recs) => {
      const t = { requests: recs.length, bytesOut: 0, bytesIn: 0, byKind: {} };
      for (const r of recs) {
        t.bytesOut += r.bytes;
        t.bytesIn += r.received;
        const k = (t.byKind[kindOf(r)] ??= { requests: 0, bytesOut: 0, bytesIn: 0, adverts: 0, advertBytes: 0, posts: 0, non200: 0 });
        k.requests++;
        k.bytesOut += r.bytes;
        k.bytesIn += r.received;
        if (isAdvert(r)) {
          k.adverts++;
          k.advertBytes += r.bytes;
        } else if (r.method === 'POST') k.posts++;
        if (r.status !== 200) k.non200++;
      }
      return t;
    };
    const kind = (t, k) => t.byKind[k] ?? { requests: 0, bytesOut: 0, bytesIn: 0, adverts: 0, advertBytes: 0, posts: 0, non200: 0 };

    /**
     * CPU of the fleet (the agents, their components) and of the server (with its reaped `git http-backend`
     * children) since the last call, as a share of the machine's cores: on 2 cores, N agents and the server compete
     * for the same CPU, so a slow report may be the machine's doing rather than the protocol's.
     */
    const cpuMeter = () => {
      const read = () => ({
        at: performance.now(),
        fleet: agents.reduce((s, a) => s + (h.procStat(a.pid)?.withChildren ?? 0), 0),
        server: h.procStat(server.pid)?.withChildren ?? 0,
      });
      let last = read();
      return () => {
        const now = read();
        const capacity = ((now.at - last.at) / 1000) * h.clockTicksPerSecond() * cpus().length;
        const r = { fleetPercent: round(((now.fleet - last.fleet) / capacity) * 100, 1), serverPercent: round(((now.server - last.server) / capacity) * 100, 1) };
        last = now;
        return r;
      };
    };

    /** Body size of GET info/refs?service=S (with a Git-Protocol header for v2). */
    const advertBytes = (url, service, v2) =>
      new Promise((resolve, reject) => {
        const req = get(`${url}/info/refs?service=${service}`, { headers: v2 ? { 'git-protocol': 'version=2' } : {} }, (res) => {
          let bytes = 0;
          res.on('data', (d) => (bytes += d.length));
          res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`GET info/refs?service=${service}: HTTP ${res.statusCode}`))));
        });
        req.on('error', reject);
      });

    const isDone = (e) => e.msg === 'all components running' || e.msg === 'apply finished' || e.msg?.startsWith?.('apply failed');
    const byMode = Object.fromEntries(modes.map((m) => [m, []]));
    // Each N in each mode, the modes of one N back to back (so that a change in the machine's load falls on both).
    for (const [n, mode] of sizes.flatMap((size) => modes.map((m) => [size, m]))) {
      const separate = mode === 'separate';
      const name = separate ? `fleet-${n}-sep` : `fleet-${n}`;
      const bare = join(work, 'srv', `${name}.git`);
      await git('init', '--quiet', '--bare', '--initial-branch=main', bare);
      await git('-C', bare, 'config', 'http.receivepack', 'true');
      await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      const sha0 = (await git('-C', ws, 'rev-parse', 'HEAD')).stdout.trim();
      const url = `http://127.0.0.1:${port}/${name}.git`;
      // Where the notes land: the followed repository, or an empty reports repository beside it.
      const notesBare = separate ? join(work, 'srv', `reports-${n}.git`) : bare;
      const notesUrl = separate ? `http://127.0.0.1:${port}/reports-${n}.git` : url;
      if (separate) {
        await git('init', '--quiet', '--bare', '--initial-branch=main', notesBare);
        await git('-C', notesBare, 'config', 'http.receivepack', 'true');
      }
      const stateRoot = join(work, `state-${mode}-${n}`);
      const devices = Array.from({ length: n }, (_, i) => `dev-${String(i + 1).padStart(3, '0')}`);
      const apiPorts = devices.map((_, i) => portBase + i);
      await h.assertPortsFree(apiPorts);
      process.stderr.write(`N = ${n}, reports ${mode}: starting ${n} agents… `);

      // 1. the fleet comes up and reports the tip
      const m0 = await mark();
      const startedAt = epochNow();
      agents = devices.map((device, i) => {
        const a = h.startAgent({
          gitRepo: url,
          plan: 'plans/idle.toml',
          stateDir: join(stateRoot, device),
          trustArgs: ['--trusted-key', `${keyPrefix}.pub`],
          extraArgs: [
            ...['--ref', 'main', '--device', device, '--poll', opts.poll, '--status', 'git-notes', '--listen', `127.0.0.1:${apiPorts[i]}`],
            ...(separate ? ['--status-repo', notesUrl] : []),
          ],
        });
        a.device = device;
        void a.exited.then((x) => (a.exit = x));
        return a;
      });
      const up = await waitForSuccess(notesBare, devices, sha0, 60_000 + 3_000 * n, `N = ${n} (${mode}), first commit`);
      const allUpMs = Math.max(...up.seen.values()) - startedAt;
      // The last `success` push has updated the ref; wait for every agent to have logged its delivery (its POST
      // answered) so that no report of the first commit overlaps the quiet window.
      const delivered = (a, sha, state) => a.events.some((e) => e.msg === 'commit status delivered' && e.commit === sha && e.state === state);
      await Promise.all(agents.map((a) => a.waitFor((e) => e.msg === 'commit status delivered' && e.commit === sha0 && e.state === 'success', 30_000, `${a.device}'s success delivery`)));
      process.stderr.write(`all reported ${sha0.slice(0, 7)} after ${fmt(allUpMs / 1000, 1)} s; quiet ${quietPolls} × ${opts.poll}… `);

      // 2. the quiet window: no-op polls only
      const q0 = await mark();
      const quietStart = epochNow();
      const cpu = cpuMeter();
      await sleep(quietPolls * pollMs);
      const q1 = await mark();
      const quietMs = epochNow() - quietStart;
      const quietCpu = cpu();

      // 3. the ref advertisements at this N (outside both windows)
      const refsIn = async (b) => (await git('-C', b, 'for-each-ref', '--format=%(refname)')).stdout.split('\n').filter(Boolean).length;
      const adverts = {
        // Refs in the followed repository, and in the repository the reports go to (the same one in mode same).
        refsOnServer: await refsIn(bare),
        refsInReportsRepo: await refsIn(notesBare),
        // The report push's advertisement is the reports repository's; the fetch's and the poll's, the followed one's.
        receivePackInfoRefs: await advertBytes(notesUrl, 'git-receive-pack', false),
        uploadPackV1InfoRefs: await advertBytes(url, 'git-upload-pack', false),
        uploadPackV2InfoRefs: await advertBytes(url, 'git-upload-pack', true),
      };

      // 4. one commit
      version++;
      writeRecipe(`1.0.${version}`);
      const sha1 = await commit(`idle 1.0.${version}`);
      cpu();
      const p0 = await mark();
      const push = await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      const pushedAt = push.endedAt;
      process.stderr.write(`pushed ${sha1.slice(0, 7)}… `);
      const rep = await waitForSuccess(notesBare, devices, sha1, 3 * pollMs + 60_000 + 1_000 * n, `N = ${n} (${mode}), the pushed commit`);
      const p1 = await mark();
      const commitCpu = cpu();
      await Promise.all(agents.map((a) => a.waitFor((e) => e.msg === 'commit status delivered' && e.commit === sha1 && e.state === 'success', 30_000, `${a.device}'s success delivery`)));
      const lastReportMs = Math.max(...rep.seen.values()) - pushedAt;
      process.stderr.write(`all reported after ${fmt(lastReportMs / 1000, 1)} s\n`);

      const startup = tally(await records(m0, q0));
      const quiet = tally(await records(q0, q1));
      const commitRecs = await records(p0, p1);
      const win = tally(commitRecs);

      // Per device, from its own log: push → new revision (the look that found it), → reconcile plan, → done.
      const perDevice = agents.map((a) => {
        const at = (pred) => a.events.find(pred)?.t;
        const newRev = at((e) => e.msg === 'new revision' && e.revision === sha1);
        const planIdx = a.events.findIndex((e) => e.msg === 'reconcile plan' && e.revision === sha1);
        const plan = planIdx >= 0 ? a.events[planIdx].t : undefined;
        const done = a.events.find((e, i) => i > planIdx && isDone(e));
        return {
          device: a.device,
          reportedMs: rep.seen.get(a.device) - pushedAt,
          pendingSeenMs: rep.pendingSeen.has(a.device) ? rep.pendingSeen.get(a.device) - pushedAt : undefined,
          newRevisionMs: newRev !== undefined ? newRev - pushedAt : undefined,
          applyMs: plan !== undefined && done ? done.t - plan : undefined,
          appliedMs: done ? done.t - pushedAt : undefined,
          outcome: done?.msg,
          deliveries: a.events.filter((e) => e.msg === 'commit status delivered' && e.commit === sha1).length,
          retries: a.events.filter((e) => e.msg === 'commit status not delivered; will retry' && e.commit === sha1).length,
          pendingDelivered: delivered(a, sha1, 'pending'),
        };
      });
      // Warnings and errors, counted by message and code (with one example of the error text).
      const warnings = {};
      for (const e of agents.flatMap((a) => a.events.filter((x) => x.level >= 40))) {
        const key = `${e.msg}${e.code ? ` (${e.code})` : ''}`;
        warnings[key] ??= { count: 0, afterPush: 0, example: String(e.err ?? e.error ?? '').slice(0, 300) };
        warnings[key].count++;
        if (e.t >= pushedAt) warnings[key].afterPush++;
      }

      // Polls: a look is one POST (ls-refs; the capabilities GET only on an agent's first look): count looks by
      // their POST.
      const quietLooks = kind(quiet, 'look').posts;
      const noopPoll = {
        looks: quietLooks,
        looksPerDevicePerInterval: round(quietLooks / n / (quietMs / pollMs), 2),
        requests: round(quiet.requests / quietLooks, 2),
        bytesOut: round(quiet.bytesOut / quietLooks, 1),
        bytesIn: round(quiet.bytesIn / quietLooks, 1),
        lsRefsResponseBytes: median(recordsOf(await records(q0, q1), 'POST', 'look').map((r) => r.bytes)),
        otherRequestsInWindow: quiet.requests - kind(quiet, 'look').requests,
        // Discovery GETs among the looks (0: every look after an agent's first is the POST alone).
        lookGets: kind(quiet, 'look').adverts,
      };
      // The commit's own cost: its fetches and reports, plus one look per device (the one that found it).
      const fetchK = kind(win, 'fetch');
      const reportK = kind(win, 'report');
      const commitReq = fetchK.requests + reportK.requests + n * noopPoll.requests;
      const commitOut = fetchK.bytesOut + reportK.bytesOut + n * noopPoll.bytesOut;
      const commitIn = fetchK.bytesIn + reportK.bytesIn + n * noopPoll.bytesIn;
      const deliveries = perDevice.reduce((s, d) => s + d.deliveries, 0);
      const reported = perDevice.map((d) => d.reportedMs);
      const applies = perDevice.map((d) => d.applyMs).filter(Number.isFinite);
      const r = {
        n,
        reports: mode,
        allUpMs: round(allUpMs),
        startup: { requests: startup.requests, bytesOut: startup.bytesOut, bytesIn: startup.bytesIn, perDevice: { requests: round(startup.requests / n, 1), bytes: round((startup.bytesOut + startup.bytesIn) / n) } },
        quiet: { ms: round(quietMs), ...quiet, noopPoll, cpu: quietCpu },
        adverts,
        commit: {
          sha: sha1,
          reportedMs: { p50: round(median(reported)), max: round(Math.max(...reported)), min: round(Math.min(...reported)) },
          newRevisionMs: { p50: round(median(perDevice.map((d) => d.newRevisionMs).filter(Number.isFinite))), max: round(Math.max(...perDevice.map((d) => d.newRevisionMs).filter(Number.isFinite))) },
          applyMs: { p50: round(median(applies)), max: round(Math.max(...applies)) },
          appliedMs: { p50: round(median(perDevice.map((d) => d.appliedMs).filter(Number.isFinite))), max: round(Math.max(...perDevice.map((d) => d.appliedMs).filter(Number.isFinite))) },
          // Applied (the agent's log) → the success note on the server: the two report pushes, pending then success.
          appliedToReportedMs: { p50: round(median(perDevice.filter((d) => Number.isFinite(d.appliedMs)).map((d) => d.reportedMs - d.appliedMs))) },
          cpu: commitCpu,
          window: win,
          perDevice: {
            requests: round(commitReq / n, 2),
            bytesOut: round(commitOut / n),
            bytesIn: round(commitIn / n),
            bytes: round((commitOut + commitIn) / n),
            // The same without the ref advertisements of its fetch and reports (the part that grows with the refs).
            bytesWithoutAdverts: round((commitOut + commitIn - fetchK.advertBytes - reportK.advertBytes) / n),
            fetch: { requests: round(fetchK.requests / n, 2), bytesOut: round(fetchK.bytesOut / n), bytesIn: round(fetchK.bytesIn / n), advertBytes: round(fetchK.advertBytes / Math.max(1, fetchK.adverts)) },
            report: { requests: round(reportK.requests / n, 2), bytesOut: round(reportK.bytesOut / n), bytesIn: round(reportK.bytesIn / n), advertBytes: round(reportK.advertBytes / Math.max(1, reportK.adverts)) },
            look: { requests: noopPoll.requests, bytesOut: noopPoll.bytesOut, bytesIn: noopPoll.bytesIn },
          },
          noopLooksInWindowBeyondOne: kind(win, 'look').posts - n,
          // Advertisements asked for in the window: a report's only after a refused push, a look's only on a first look.
          reportAdverts: reportK.adverts,
          lookAdverts: kind(win, 'look').adverts,
          receivePackPosts: reportK.posts,
          receivePackPostsPerDevice: round(reportK.posts / n, 2),
          statusesDelivered: deliveries,
          // A POST beyond one per delivered status is a push the server refused and the reporter redid (a collision).
          collisions: { extraPosts: reportK.posts - deliveries, non200: reportK.non200 + fetchK.non200, outboxRetries: perDevice.reduce((s, d) => s + d.retries, 0) },
          outcomes: [...new Set(perDevice.map((d) => d.outcome))],
        },
        perDevice,
        warnings,
      };
      byMode[mode].push(r);

      // The fleet goes before the next N: SIGTERM (each stops its component), SIGKILL to its group after 15 s.
      // (Not killStragglers(work): the server's command line names the work directory too.)
      await Promise.all(agents.map((a) => a.stop(15_000)));
      await h.killStragglers(agents.map((a) => a.pid), stateRoot);
      await h.killStragglers([], idle);
      agents = [];
    }
    const loadAfter = h.load1();
    const othersPercent = others.percent();

    // ─── summary, per reports mode ───
    const timeRef = (r) => pollMs + r.commit.applyMs.max;
    const summaries = {};
    for (const mode of modes) {
      const list = byMode[mode];
      const first = list[0];
      const last = list[list.length - 1];
      // Against the devices (not the refs): the projection is in devices, and in mode separate the followed
      // repository's ref count does not move.
      const fit = linearFit(list.map((r) => [r.n, r.adverts.receivePackInfoRefs]));
      const fitUp = linearFit(list.map((r) => [r.n, r.adverts.uploadPackV1InfoRefs]));
      const ratios = {
        from: first.n,
        to: last.n,
        perDeviceCommitRequests: round(last.commit.perDevice.requests / first.commit.perDevice.requests, 3),
        perDeviceCommitBytes: round(last.commit.perDevice.bytes / first.commit.perDevice.bytes, 3),
        perDeviceCommitBytesWithoutAdverts: round(last.commit.perDevice.bytesWithoutAdverts / first.commit.perDevice.bytesWithoutAdverts, 3),
        perDeviceCommitFetchBytes: round(
          (last.commit.perDevice.fetch.bytesOut + last.commit.perDevice.fetch.bytesIn) / (first.commit.perDevice.fetch.bytesOut + first.commit.perDevice.fetch.bytesIn),
          3,
        ),
        perDeviceCommitReportBytes: round(
          (last.commit.perDevice.report.bytesOut + last.commit.perDevice.report.bytesIn) / (first.commit.perDevice.report.bytesOut + first.commit.perDevice.report.bytesIn),
          3,
        ),
        perDeviceNoopPollRequests: round(last.quiet.noopPoll.requests / first.quiet.noopPoll.requests, 3),
        perDeviceNoopPollBytes: round((last.quiet.noopPoll.bytesOut + last.quiet.noopPoll.bytesIn) / (first.quiet.noopPoll.bytesOut + first.quiet.noopPoll.bytesIn), 3),
      };
      const aims = {
        flatCommitCost: ratios.perDeviceCommitRequests <= 1.1 && ratios.perDeviceCommitBytes <= 1.1,
        flatPollCost: ratios.perDeviceNoopPollRequests <= 1.1 && ratios.perDeviceNoopPollBytes <= 1.1,
        allReportedWithin10sOfPollPlusApply: last.commit.reportedMs.max - timeRef(last) <= 10_000,
      };
      summaries[mode] = { first, last, fit, fitUp, ratios, aims };
    }

    const modeLabel = { same: 'same', separate: 'separate' };
    console.log(
      `\nfleet benchmark — node ${process.version}, ${h.machine().cpu.count} × ${h.machine().cpu.model ?? 'cpu'}; one idle component, signed, ` +
        `--poll ${opts.poll} (±10 %), git-notes reports; N = ${sizes.join(', ')}, a fresh fleet and repository each; ` +
        `reports: ${modes.map((m) => (m === 'same' ? 'same (to the followed repository)' : 'separate (--status-repo reports-N.git)')).join(' and ')}`,
    );
    const L = 46;
    const W = 16;
    for (const n of sizes) {
      const rs = modes.map((m) => byMode[m].find((r) => r.n === n));
      console.log(`\nN = ${n}  (all ${n} up and reporting the first commit after ${rs.map((r, i) => `${fmt(r.allUpMs / 1000, 1)} s ${modeLabel[modes[i]]}`).join(', ')})`);
      console.log(`${'measure'.padEnd(L)} ${modes.map((m) => m.padStart(W)).join(' ')}  reference`);
      const row = (label, value, ref = '') => console.log(`${label.padEnd(L)} ${rs.map((r, i) => value(r, summaries[modes[i]].first).padStart(W)).join(' ')}  ${ref}`);
      const both = (f) => rs.map((r, i) => f(r, summaries[modes[i]].first)).join(' / ');
      const pdb = (pd) => pd.bytesOut + pd.bytesIn;
      row('no-op poll: requests / device / poll', (r) => fmt(r.quiet.noopPoll.requests, 2), `looks per device per interval ${both((r) => fmt(r.quiet.noopPoll.looksPerDevicePerInterval, 2))} (1)`);
      row('no-op poll: bytes out + in / device / poll', (r) => `${fmt(r.quiet.noopPoll.bytesOut)} + ${fmt(r.quiet.noopPoll.bytesIn)}`, `ls-refs answer ${both((r) => `${fmt(r.quiet.noopPoll.lsRefsResponseBytes)} B`)}; other requests in the window ${both((r) => String(r.quiet.noopPoll.otherRequestsInWindow))} (0)`);
      row('commit: requests / device', (r) => fmt(r.commit.perDevice.requests, 2), `look + fetch + reports: ${both((r) => `${fmt(r.commit.perDevice.look.requests, 0)} + ${fmt(r.commit.perDevice.fetch.requests, 2)} + ${fmt(r.commit.perDevice.report.requests, 2)}`)}`);
      row('commit: bytes out + in / device', (r) => fmt(r.commit.perDevice.bytes), `vs N = ${rs.length ? summaries[modes[0]].first.n : ''}: ${both((r, f) => ratio(r.commit.perDevice.bytes, f.commit.perDevice.bytes))}`);
      row('  of which the fetch / the reports', (r) => `${fmt(pdb(r.commit.perDevice.fetch))} / ${fmt(pdb(r.commit.perDevice.report))}`, `reports vs N = ${summaries[modes[0]].first.n}: ${both((r, f) => ratio(pdb(r.commit.perDevice.report), pdb(f.commit.perDevice.report)))}`);
      row('  the same without ref advertisements', (r) => fmt(r.commit.perDevice.bytesWithoutAdverts), `vs N = ${summaries[modes[0]].first.n}: ${both((r, f) => ratio(r.commit.perDevice.bytesWithoutAdverts, f.commit.perDevice.bytesWithoutAdverts))}`);
      row('receive-pack POSTs / device', (r) => fmt(r.commit.receivePackPostsPerDevice, 2), `2 (pending, success); extra POSTs ${both((r) => String(r.commit.collisions.extraPosts))}, non-200 ${both((r) => String(r.commit.collisions.non200))}, outbox retries ${both((r) => String(r.commit.collisions.outboxRetries))}`);
      row('advertisements asked: reports / looks', (r) => `${r.commit.reportAdverts} / ${r.commit.lookAdverts}`, `in the commit window (0 / 0: a report is one POST, a look one POST); in the quiet window, looks ${both((r) => String(r.quiet.noopPoll.lookGets))}`);
      row('advertisement: receive-pack info/refs', (r) => `${fmt(r.adverts.receivePackInfoRefs)} B`, `no longer asked by a report (only after a refused push); refs in the reports' repository ${both((r) => String(r.adverts.refsInReportsRepo))}`);
      row('advertisement: upload-pack v1 info/refs', (r) => `${fmt(r.adverts.uploadPackV1InfoRefs)} B`, `each fetch starts with it (isomorphic-git fetches in v1); refs in the followed repository ${both((r) => String(r.adverts.refsOnServer))}`);
      row('advertisement: upload-pack v2 info/refs', (r) => `${fmt(r.adverts.uploadPackV2InfoRefs)} B`, `an agent's first look only (capabilities only; ls-refs asks for refs/heads/main)`);
      row('push → device reported success, p50', (r) => `${fmt(r.commit.reportedMs.p50)} ms`, `P/2 + apply p50 = ${both((r) => `${fmt(pollMs / 2 + r.commit.applyMs.p50)} ms`)}`);
      row('push → all reported (max)', (r) => `${fmt(r.commit.reportedMs.max)} ms`, `poll + apply (max) = ${both((r) => `${fmt(timeRef(r))} ms (${r.commit.reportedMs.max >= timeRef(r) ? '+' : '−'}${fmt(Math.abs(r.commit.reportedMs.max - timeRef(r)) / 1000, 1)} s)`)}; aim within +10 s`);
      row('  push → new revision (found), p50 / max', (r) => `${fmt(r.commit.newRevisionMs.p50)} / ${fmt(r.commit.newRevisionMs.max)}`, `apply p50 / max ${both((r) => `${fmt(r.commit.applyMs.p50)} / ${fmt(r.commit.applyMs.max)} ms`)}`);
      row('  applied → success note on the server, p50', (r) => `${fmt(r.commit.appliedToReportedMs.p50)} ms`, 'two pushes: pending, success (one POST each)');
      row('CPU: fleet / server, during the commit', (r) => `${fmt(r.commit.cpu.fleetPercent, 0)} / ${fmt(r.commit.cpu.serverPercent, 0)} %`, `of ${cpus().length} cores; quiet: ${both((r) => `${fmt(r.quiet.cpu.fleetPercent, 0)} / ${fmt(r.quiet.cpu.serverPercent, 0)} %`)}`);
      for (const r of rs) if (r.commit.noopLooksInWindowBeyondOne > 0) console.log(`  (${r.reports}: ${r.commit.noopLooksInWindowBeyondOne} no-op looks in the commit window, not counted)`);
    }
    const s0 = summaries[modes[0]];
    console.log(`\nper-device cost, N = ${s0.last.n} ÷ N = ${s0.first.n} (aim ≤ 1.1):`);
    console.log(`${''.padEnd(L)} ${modes.map((m) => m.padStart(W)).join(' ')}`);
    const ratioRow = (label, key) => console.log(`${label.padEnd(L)} ${modes.map((m) => `×${fmt(summaries[m].ratios[key], 3)}`.padStart(W)).join(' ')}`);
    ratioRow('no-op poll requests', 'perDeviceNoopPollRequests');
    ratioRow('no-op poll bytes', 'perDeviceNoopPollBytes');
    ratioRow('commit requests', 'perDeviceCommitRequests');
    ratioRow('commit bytes', 'perDeviceCommitBytes');
    ratioRow('  the fetch\'s bytes', 'perDeviceCommitFetchBytes');
    ratioRow('  the reports\' bytes', 'perDeviceCommitReportBytes');
    ratioRow('  commit bytes without advertisements', 'perDeviceCommitBytesWithoutAdverts');
    console.log(`${'aim ≤ 1.1: commit / poll'.padEnd(L)} ${modes.map((m) => `${summaries[m].aims.flatCommitCost ? 'met' : 'MISSED'} / ${summaries[m].aims.flatPollCost ? 'met' : 'MISSED'}`.padStart(W)).join(' ')}`);
    for (const m of modes) {
      const { fit, fitUp, last } = summaries[m];
      console.log(
        `${m}: advertisements against the devices: receive-pack ≈ ${fmt(fit.intercept)} + ${fmt(fit.slope, 1)} B per device (r² ${fmt(fit.r2, 4)}; no longer in a report), ` +
          `upload-pack v1 ≈ ${fmt(fitUp.intercept)} + ${fmt(fitUp.slope, 1)} B per device (each fetch); ` +
          `time to all reported at N = ${last.n}: ${fmt(last.commit.reportedMs.max)} ms against poll + apply ${fmt(timeRef(last))} ms ` +
          `(aim within 10 s: ${summaries[m].aims.allReportedWithin10sOfPollPlusApply ? 'met' : 'MISSED'})`,
      );
    }
    for (const m of modes)
      for (const r of byMode[m]) {
        if (r.commit.outcomes.some((o) => o !== 'all components running')) console.log(`warning: N = ${r.n} (${m}): outcomes ${r.commit.outcomes.join(', ')}`);
        for (const [w, { count, afterPush, example }] of Object.entries(r.warnings))
          console.log(`warning: N = ${r.n} (${m}): agents logged "${w}" ${count} time(s), ${afterPush} after the push${example ? `, e.g. ${example}` : ''}`);
      }
    const note = h.busyNote(othersPercent, loadBefore, loadAfter);
    if (note) console.log(note);

    const agentCommand =
      'keystone agent --repo http://127.0.0.1:PORT/fleet-N.git --ref main --plan plans/idle.toml --device dev-NNN ' +
      `--poll ${opts.poll} --state-dir FRESH --trusted-key K.pub --status git-notes --listen 127.0.0.1:PORT_i --log-format json --stop-on-exit`;
    h.ensureDir(join(benchDir, 'results'));
    writeFileSync(
      resultsFile,
      JSON.stringify(
        {
          ...h.resultsHead('fleet', { loadBefore, loadAfter, othersPercent, withGit: true }),
          sizes,
          pollMs,
          quietPolls,
          reportsModes: modes,
          commands: {
            same: agentCommand,
            separate: `${agentCommand.replace('fleet-N.git', 'fleet-N-sep.git')} --status-repo http://127.0.0.1:PORT/reports-N.git`,
          },
          measure:
            'requests and bytes served by git http-backend (src/dev/git-http-server.ts records), split by kind: look = protocol v2 upload-pack ' +
            '(a poll: one ls-refs POST, counted by its POST), fetch = v1 upload-pack, report = receive-pack (one POST, no advertisement; and ' +
            'anything asked of a reports repository); a commit costs its fetches and ' +
            'reports plus one look per device. reportedMs: from `git push` returning to the bench seeing the device\'s success note on the bare ' +
            'repository the reports go to (polled every ~200 ms). advertisementFit: bytes against the number of devices.',
          references: {
            flat: `per-device cost at N = ${s0.last.n} ÷ at N = ${s0.first.n}, aim ≤ 1.1`,
            timeToAllReported: 'one poll interval + the slowest apply, aim: the last report within 10 s of it',
          },
          byReports: Object.fromEntries(
            modes.map((m) => [
              m,
              {
                ratios: summaries[m].ratios,
                aims: summaries[m].aims,
                advertisementFit: { receivePack: summaries[m].fit, uploadPackV1: summaries[m].fitUp },
                bySize: byMode[m].map((r) => ({ ...r, perDevice: r.perDevice.map((d) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, typeof v === 'number' ? round(v, 1) : v]))) })),
              },
            ]),
          ),
          benchSeconds: round((performance.now() - tStart) / 1000, 1),
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - tStart) / 1000)} s)`);
  } finally {
    // Every agent in its own process group: SIGKILL the groups that are left (a failure midway), then anything
    // else still naming the work directory (the idle programs).
    for (const a of agents) if (!a.exit) h.signalGroup(a.pid, 'SIGKILL');
    await server.stop();
    await h.killStragglers([], work);
    rmWork();
  }
}

/** Records of `method` and kind `kind` (look: protocol v2 upload-pack). */
function recordsOf(recs, method, kind) {
  return recs.filter((r) => r.method === method && /git-upload-pack$/.test(r.path) && (kind !== 'look' || r.protocol === 'version=2'));
}

/** Least squares y = intercept + slope · x, with r². */
function linearFit(points) {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
    syy += (y - my) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : NaN;
  const intercept = my - slope * mx;
  const r2 = sxx > 0 && syy > 0 ? (sxy * sxy) / (sxx * syy) : NaN;
  return { slope: +slope.toFixed(2), intercept: +intercept.toFixed(1), r2: +r2.toFixed(5) };
}
