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
import { Buffer } from 'node:buffer';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
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
      enrolment: { type: 'string', default: 'both' },
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
  const enrolments = opts.enrolment === 'both' ? ['off', 'on'] : [opts.enrolment];
  if (
    !['same', 'separate', 'both'].includes(opts.reports) ||
    !['on', 'off', 'both'].includes(opts.enrolment) ||
    sizes.length === 0 ||
    sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 999) ||
    !(pollMs >= 1000) ||
    !(quietPolls >= 1) ||
    !Number.isInteger(portBase) ||
    portBase < 1024 ||
    portBase + Math.max(...sizes) >= 32768
  ) {
    console.error('usage: node bench/fleet.bench.mjs [--sizes 10,25,50] [--reports same|separate|both] [--enrolment on|off|both] [--poll 5s] [--quiet 2] [--port-base 31700]');
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

    // The repository: a work tree with the first commit; each fleet clones it, commits in its clone and pushes to its
    // own bare repository on disk (so that the enrolment commits of one fleet are in no other's history).
    const ws = join(work, 'ws');
    await git('init', '--quiet', '--initial-branch=main', ws);
    h.ensureDir(join(ws, 'recipes'));
    h.ensureDir(join(ws, 'plans'));
    const writeRecipe = (version, dir = ws) =>
      writeFileSync(
        join(dir, 'recipes', 'com.bench.idle.toml'),
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
    // The enrolment key (SPEC §15): signs the device certificates; its public half is the agents' --enrollment-key.
    const enrollPrefix = join(work, 'keys', 'enroll');
    if (enrolments.includes('on')) await keystonectl('keygen', '--out', enrollPrefix, '--no-password');
    let version = 0;
    /** Signs (unless `sign` is false), commits everything in `dir` and returns the commit id. */
    const commit = async (message, dir = ws, sign = true) => {
      if (sign) await keystonectl('sign', '--key', `${keyPrefix}.key`, '--repo', dir);
      await git('-C', dir, 'add', '-A');
      await git('-C', dir, 'commit', '--quiet', '-m', message);
      return (await git('-C', dir, 'rev-parse', 'HEAD')).stdout.trim();
    };
    await commit('the fleet: one idle component');
    const port = await serverPort;
    /** `fn` over `items`, at most `width` at a time (the identity and enrol programs: one Node process each). */
    const pool = async (items, width, fn) => {
      const out = new Array(items.length);
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(width, items.length) }, async () => {
          while (next < items.length) {
            const i = next++;
            out[i] = await fn(items[i], i);
          }
        }),
      );
      return out;
    };
    /**
     * Enrols `device` as an operator does, before its agent's first start: its key pair made in its fresh state directory
     * and its public half printed by `keystone identity --json`; `keystonectl enroll` writes devices/<device>.cert in
     * `dir` (the fleet's work tree). Returns the certificate's size.
     */
    const enrol = async (device, stateDir, dir) => {
      const id = (await run(process.execPath, [h.KEYSTONE_BIN, 'identity', '--json', '--state-dir', stateDir, '--device', device], process.env)).stdout;
      const idFile = join(work, 'ids', `${device}-${version}-${Math.random().toString(36).slice(2, 8)}.json`);
      writeFileSync(idFile, id);
      const out = join(dir, 'devices', `${device}.cert`);
      await keystonectl('enroll', '--key', `${enrollPrefix}.key`, '--identity', idFile, '--out', out);
      return statSync(out).size;
    };
    h.ensureDir(join(work, 'ids'));
    /** Bytes of the packs in a device's Git cache (<state-dir>/git, every generation kept): what its fetches stored. */
    const cachePackBytes = (stateDir) => {
      let total = 0;
      const walk = (dir) => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          if (e.isDirectory()) walk(join(dir, e.name));
          else if (e.name.endsWith('.pack')) total += statSync(join(dir, e.name)).size;
        }
      };
      try {
        walk(join(stateDir, 'git'));
      } catch {
        return undefined;
      }
      return total;
    };

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
      if (service === 'git-receive-pack' || /\/reports-[^/]+\.git\//.test(r.path)) return 'report';
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
    // The variants: reports mode × enrolment, in this order (a variant's key is `mode/enrolment`).
    const variants = modes.flatMap((mode) => enrolments.map((enrolment) => ({ key: `${mode}/${enrolment}`, mode, enrolment })));
    const byMode = Object.fromEntries(variants.map((v) => [v.key, []]));
    /** Every device's `success` for `sha` delivered (its POST answered), so that nothing of it overlaps what comes next. */
    const allDelivered = (sha) =>
      Promise.all(agents.map((a) => a.waitFor((e) => e.msg === 'commit status delivered' && e.commit === sha && e.state === 'success', 30_000, `${a.device}'s success delivery`)));
    /**
     * What one commit's window cost, per device, by kind: its fetches (advertisement GET and pack POST; the pack apart)
     * and its reports (pending, success); the looks are counted by the caller (one per device, the one that found it).
     */
    const windowCost = (win, n) => {
      const f = kind(win, 'fetch');
      const rp = kind(win, 'report');
      return {
        fetch: { requests: round(f.requests / n, 2), bytes: round((f.bytesOut + f.bytesIn) / n), packBytes: round((f.bytesOut + f.bytesIn - f.advertBytes) / n), advertBytes: round(f.advertBytes / Math.max(1, f.adverts)) },
        report: { requests: round(rp.requests / n, 2), bytes: round((rp.bytesOut + rp.bytesIn) / n), posts: rp.posts, non200: rp.non200 + f.non200 },
      };
    };
    // Each N in each variant, the variants of one N back to back (so that a change in the machine's load falls on all).
    for (const [n, variant] of sizes.flatMap((size) => variants.map((v) => [size, v]))) {
      const { mode, enrolment } = variant;
      const separate = mode === 'separate';
      const enrolled = enrolment === 'on';
      const name = `fleet-${n}${separate ? '-sep' : ''}${enrolled ? '-enr' : ''}`;
      const bare = join(work, 'srv', `${name}.git`);
      await git('init', '--quiet', '--bare', '--initial-branch=main', bare);
      await git('-C', bare, 'config', 'http.receivepack', 'true');
      // This fleet's work tree: a clone of the first commit.
      const wsF = join(work, `ws-${name}`);
      await git('clone', '--quiet', ws, wsF);
      await git('-C', wsF, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      const sha0 = (await git('-C', wsF, 'rev-parse', 'HEAD')).stdout.trim();
      const url = `http://127.0.0.1:${port}/${name}.git`;
      // Where the notes land: the followed repository, or an empty reports repository beside it.
      const reportsName = `reports-${n}${enrolled ? '-enr' : ''}`;
      const notesBare = separate ? join(work, 'srv', `${reportsName}.git`) : bare;
      const notesUrl = separate ? `http://127.0.0.1:${port}/${reportsName}.git` : url;
      if (separate) {
        await git('init', '--quiet', '--bare', '--initial-branch=main', notesBare);
        await git('-C', notesBare, 'config', 'http.receivepack', 'true');
      }
      const stateRoot = join(work, `state-${mode}-${enrolment}-${n}`);
      const devices = Array.from({ length: n }, (_, i) => `dev-${String(i + 1).padStart(3, '0')}`);
      const apiPorts = devices.map((_, i) => portBase + i);
      await h.assertPortsFree(apiPorts);

      // 0. with enrolment: every device's keys and certificate before its agent's first start (untimed).
      let enrolSetup;
      if (enrolled) {
        process.stderr.write(`N = ${n}, reports ${mode}, enrolment on: enrolling ${n} devices… `);
        mkdirSync(stateRoot, { recursive: true });
        chmodSync(stateRoot, 0o755);
        h.ensureDir(join(wsF, 'devices'));
        const t0 = performance.now();
        const sizesOfCerts = await pool(devices, 3, (d) => enrol(d, join(stateRoot, d), wsF));
        enrolSetup = { ms: round(performance.now() - t0), certificates: n, certificateBytes: { mean: round(sizesOfCerts.reduce((x, y) => x + y, 0) / n), max: Math.max(...sizesOfCerts) } };
      }
      process.stderr.write(`N = ${n}, reports ${mode}, enrolment ${enrolment}: starting ${n} agents… `);

      // 1. the fleet comes up and reports the tip
      const m0 = await mark();
      const startedAt = epochNow();
      agents = devices.map((device, i) => {
        const a = h.startAgent({
          gitRepo: url,
          plan: 'plans/idle.toml',
          stateDir: join(stateRoot, device),
          trustArgs: ['--trusted-key', `${keyPrefix}.pub`, ...(enrolled ? ['--enrollment-key', `${enrollPrefix}.pub`] : [])],
          extraArgs: [
            ...['--ref', 'main', '--device', device, '--poll', opts.poll, '--status', 'git-notes', '--listen', `127.0.0.1:${apiPorts[i]}`],
            ...(separate ? ['--status-repo', notesUrl] : []),
          ],
        });
        a.device = device;
        void a.exited.then((x) => (a.exit = x));
        return a;
      });
      const up = await waitForSuccess(notesBare, devices, sha0, 60_000 + 3_000 * n, `N = ${n} (${variant.key}), first commit`);
      const allUpMs = Math.max(...up.seen.values()) - startedAt;
      // The last `success` push has updated the ref; wait for every agent to have logged its delivery (its POST
      // answered) so that no report of the first commit overlaps the next window.
      const delivered = (a, sha, state) => a.events.some((e) => e.msg === 'commit status delivered' && e.commit === sha && e.state === state);
      await allDelivered(sha0);
      const u1 = await mark();
      const cacheAtStart = cachePackBytes(join(stateRoot, devices[0]));
      process.stderr.write(`all reported ${sha0.slice(0, 7)} after ${fmt(allUpMs / 1000, 1)} s; `);

      // 1'. with enrolment: the enrolment commit (devices/ with the N certificates, not re-signed), then one more
      // certificate (a device that does not run): each fetched by every device; measured on their own. Without: two
      // commits that change nothing a device reads (a line of README.md each, not re-signed) in their place, so that
      // both fleets have reported as many commits before the quiet window and the measured commit (a notes tree and
      // a fetch's `have` lines grow with the commits a device has reported), and as the reference for the first two.
      const measureSideCommit = async (message, certs) => {
        const sha = await commit(message, wsF, false);
        const devicesTree = enrolled ? Number((await git('-C', wsF, 'cat-file', '-s', 'HEAD:devices')).stdout.trim()) : undefined;
        const e0 = await mark();
        const pushedAt = (await git('-C', wsF, 'push', '--quiet', bare, 'HEAD:refs/heads/main')).endedAt;
        const seen = await waitForSuccess(notesBare, devices, sha, 3 * pollMs + 60_000 + 1_000 * n, `N = ${n} (${variant.key}), ${message}`);
        const e1 = await mark();
        await allDelivered(sha);
        const win = tally(await records(e0, e1));
        return {
          sha,
          ...(enrolled && {
            certificatesAdded: certs,
            certificatesInTree: (await git('-C', wsF, 'ls-tree', 'HEAD', 'devices/')).stdout.split('\n').filter(Boolean).length,
            devicesTreeBytes: devicesTree,
          }),
          allReportedMs: round(Math.max(...seen.seen.values()) - pushedAt),
          // The first device's Git cache once it has the commit (a thin pack is completed before it is stored).
          cachePackBytes: cachePackBytes(join(stateRoot, devices[0])),
          ...windowCost(win, n),
          window: { requests: win.requests, bytesOut: win.bytesOut, bytesIn: win.bytesIn },
        };
      };
      let enrolmentCommits;
      if (enrolled) {
        const bulk = await measureSideCommit(`enrol ${n} devices`, n);
        process.stderr.write(`enrolment commit: ${fmt(bulk.fetch.packBytes)} B of pack per device; `);
        const spareBytes = await enrol('dev-spare', join(work, `state-spare-${name}`), wsF);
        const single = await measureSideCommit('enrol one more device', 1);
        single.certificateBytes = spareBytes;
        process.stderr.write(`one more: ${fmt(single.fetch.packBytes)} B; `);
        enrolmentCommits = { bulk, single };
      } else {
        writeFileSync(join(wsF, 'README.md'), 'A benchmark fleet.\n');
        const bulk = await measureSideCommit('README', 0);
        writeFileSync(join(wsF, 'README.md'), 'A benchmark fleet.\nOne line more.\n');
        const single = await measureSideCommit('README: one line more', 0);
        process.stderr.write(`two README commits: ${fmt(bulk.fetch.packBytes)}, ${fmt(single.fetch.packBytes)} B of pack per device; `);
        enrolmentCommits = { bulk, single, readme: true };
      }
      process.stderr.write(`quiet ${quietPolls} × ${opts.poll}… `);

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
      writeRecipe(`1.0.${version}`, wsF);
      const sha1 = await commit(`idle 1.0.${version}`, wsF);
      cpu();
      const p0 = await mark();
      const push = await git('-C', wsF, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
      const pushedAt = push.endedAt;
      process.stderr.write(`pushed ${sha1.slice(0, 7)}… `);
      const rep = await waitForSuccess(notesBare, devices, sha1, 3 * pollMs + 60_000 + 1_000 * n, `N = ${n} (${variant.key}), the pushed commit`);
      const p1 = await mark();
      const commitCpu = cpu();
      await Promise.all(agents.map((a) => a.waitFor((e) => e.msg === 'commit status delivered' && e.commit === sha1 && e.state === 'success', 30_000, `${a.device}'s success delivery`)));
      const lastReportMs = Math.max(...rep.seen.values()) - pushedAt;
      process.stderr.write(`all reported after ${fmt(lastReportMs / 1000, 1)} s\n`);

      const startup = tally(await records(m0, u1));
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
      // What one device's note says about the commit (its entry: the state line, agent version and health, and the
      // signature line `  ~ <key id> <signature>`), as pushed: the blob a report adds, whatever the fleet.
      const noteText = (await git('-C', notesBare, 'notes', `--ref=refs/notes/keystone-devices/${devices[0]}`, 'show', sha1).catch(() => ({ stdout: '' }))).stdout;
      const r = {
        n,
        reports: mode,
        enrolment,
        allUpMs: round(allUpMs),
        ...(enrolSetup && { enrolSetup }),
        // The first device's Git cache (packs, bytes): after the first commit, and after the measured one.
        cachePackBytes: { start: cacheAtStart, end: cachePackBytes(join(stateRoot, devices[0])) },
        ...(enrolmentCommits && { enrolmentCommits }),
        note: { device: devices[0], bytes: Buffer.byteLength(noteText), lines: noteText.split('\n').filter(Boolean).length, signed: /^ {2}~ [0-9a-f]{16} \S+$/m.test(noteText), text: noteText.slice(0, 2000) },
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
            report: {
              requests: round(reportK.requests / n, 2),
              bytesOut: round(reportK.bytesOut / n),
              bytesIn: round(reportK.bytesIn / n),
              advertBytes: round(reportK.advertBytes / Math.max(1, reportK.adverts)),
              // One report is one POST: what it sends (the notes commit, its trees and blob) and what the server answers.
              postBytesIn: round(reportK.bytesIn / Math.max(1, reportK.posts)),
              postBytesOut: round(reportK.bytesOut / Math.max(1, reportK.posts)),
            },
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
      byMode[variant.key].push(r);

      // The fleet goes before the next N: SIGTERM (each stops its component), SIGKILL to its group after 15 s.
      // (Not killStragglers(work): the server's command line names the work directory too.)
      await Promise.all(agents.map((a) => a.stop(15_000)));
      await h.killStragglers(agents.map((a) => a.pid), stateRoot);
      await h.killStragglers([], idle);
      agents = [];
    }
    const loadAfter = h.load1();
    const othersPercent = others.percent();

    // ─── summary, per variant (reports mode × enrolment) ───
    const timeRef = (r) => pollMs + r.commit.applyMs.max;
    const pdb = (pd) => pd.bytesOut + pd.bytesIn;
    const summaries = {};
    for (const { key } of variants) {
      const list = byMode[key];
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
        perDeviceCommitLookBytes: round(pdb(last.commit.perDevice.look) / pdb(first.commit.perDevice.look), 3),
        perDeviceCommitFetchBytes: round(pdb(last.commit.perDevice.fetch) / pdb(first.commit.perDevice.fetch), 3),
        perDeviceCommitReportBytes: round(pdb(last.commit.perDevice.report) / pdb(first.commit.perDevice.report), 3),
        perDeviceNoopPollRequests: round(last.quiet.noopPoll.requests / first.quiet.noopPoll.requests, 3),
        perDeviceNoopPollBytes: round((last.quiet.noopPoll.bytesOut + last.quiet.noopPoll.bytesIn) / (first.quiet.noopPoll.bytesOut + first.quiet.noopPoll.bytesIn), 3),
        noteBytes: round(last.note.bytes / first.note.bytes, 3),
      };
      const aims = {
        flatCommitCost: ratios.perDeviceCommitRequests <= 1.1 && ratios.perDeviceCommitBytes <= 1.1,
        flatPollCost: ratios.perDeviceNoopPollRequests <= 1.1 && ratios.perDeviceNoopPollBytes <= 1.1,
        flatReports: ratios.perDeviceCommitReportBytes <= 1.1 && last.commit.receivePackPostsPerDevice <= 2,
        allReportedWithin10sOfPollPlusApply: last.commit.reportedMs.max - timeRef(last) <= 10_000,
      };
      // The enrolment commits against the devices: bytes of pack per device (the certificates of the whole fleet once;
      // then the devices/ tree rewritten for one more).
      const enrolFit = first.enrolmentCommits && !first.enrolmentCommits.readme
        ? {
            bulkPackPerDevice: linearFit(list.map((r) => [r.n, r.enrolmentCommits.bulk.fetch.packBytes])),
            singlePackPerDevice: linearFit(list.map((r) => [r.n, r.enrolmentCommits.single.fetch.packBytes])),
            devicesTree: linearFit(list.map((r) => [r.n, r.enrolmentCommits.single.devicesTreeBytes])),
          }
        : undefined;
      summaries[key] = { first, last, fit, fitUp, ratios, aims, enrolFit };
    }
    // Enrolment on ÷ off, per N and reports mode (both enrolments measured).
    const onOff = {};
    if (enrolments.length === 2)
      for (const mode of modes)
        onOff[mode] = sizes.map((n) => {
          const off = byMode[`${mode}/off`].find((r) => r.n === n);
          const on = byMode[`${mode}/on`].find((r) => r.n === n);
          const q = (f) => round(f(on) / f(off), 3);
          return {
            n,
            noopPollRequests: q((r) => r.quiet.noopPoll.requests),
            noopPollBytes: q((r) => r.quiet.noopPoll.bytesOut + r.quiet.noopPoll.bytesIn),
            commitRequests: q((r) => r.commit.perDevice.requests),
            commitBytes: q((r) => r.commit.perDevice.bytes),
            lookBytes: q((r) => pdb(r.commit.perDevice.look)),
            fetchBytes: q((r) => pdb(r.commit.perDevice.fetch)),
            reportBytes: q((r) => pdb(r.commit.perDevice.report)),
            noteBytes: q((r) => r.note.bytes),
            startupBytes: q((r) => r.startup.perDevice.bytes),
          };
        });

    const vLabel = (v) => (enrolments.length > 1 ? `${v.mode === 'separate' ? 'sep' : 'same'}, enr ${v.enrolment}` : v.mode);
    console.log(
      `\nfleet benchmark — node ${process.version}, ${h.machine().cpu.count} × ${h.machine().cpu.model ?? 'cpu'}; one idle component, signed, ` +
        `--poll ${opts.poll} (±10 %), git-notes reports (every report signed by its device); N = ${sizes.join(', ')}, a fresh fleet and repository each; ` +
        `reports: ${modes.map((m) => (m === 'same' ? 'same (to the followed repository)' : 'separate (--status-repo reports-N.git)')).join(' and ')}; ` +
        `enrolment: ${enrolments.map((e) => (e === 'on' ? 'on (devices/ certificates, --enrollment-key)' : 'off (no devices/, no --enrollment-key)')).join(' and ')}`,
    );
    const L = 46;
    const W = 16;
    const s0 = summaries[variants[0].key];
    for (const n of sizes) {
      const rs = variants.map((v) => byMode[v.key].find((r) => r.n === n));
      const firsts = variants.map((v) => summaries[v.key].first);
      console.log(`\nN = ${n}  (all ${n} up and reporting the first commit after ${rs.map((r, i) => `${fmt(r.allUpMs / 1000, 1)} s ${vLabel(variants[i])}`).join(', ')})`);
      console.log(`${'measure'.padEnd(L)} ${variants.map((v) => vLabel(v).padStart(W)).join(' ')}  reference`);
      const row = (label, value, ref = '') => console.log(`${label.padEnd(L)} ${rs.map((r, i) => value(r, firsts[i]).padStart(W)).join(' ')}  ${ref}`);
      const all = (f) => rs.map((r, i) => f(r, firsts[i])).join(' / ');
      row('no-op poll: requests / device / poll', (r) => fmt(r.quiet.noopPoll.requests, 2), `looks per device per interval ${all((r) => fmt(r.quiet.noopPoll.looksPerDevicePerInterval, 2))} (1)`);
      row('no-op poll: bytes out + in / device / poll', (r) => `${fmt(r.quiet.noopPoll.bytesOut)} + ${fmt(r.quiet.noopPoll.bytesIn)}`, `ls-refs answer ${all((r) => `${fmt(r.quiet.noopPoll.lsRefsResponseBytes)} B`)}; other requests in the window ${all((r) => String(r.quiet.noopPoll.otherRequestsInWindow))} (0)`);
      row('commit: requests / device', (r) => fmt(r.commit.perDevice.requests, 2), `look + fetch + reports: ${all((r) => `${fmt(r.commit.perDevice.look.requests, 0)} + ${fmt(r.commit.perDevice.fetch.requests, 2)} + ${fmt(r.commit.perDevice.report.requests, 2)}`)}`);
      row('commit: bytes out + in / device', (r) => fmt(r.commit.perDevice.bytes), `vs N = ${s0.first.n}: ${all((r, f) => ratio(r.commit.perDevice.bytes, f.commit.perDevice.bytes))}`);
      row('  of which look / fetch / reports', (r) => `${fmt(pdb(r.commit.perDevice.look))}/${fmt(pdb(r.commit.perDevice.fetch))}/${fmt(pdb(r.commit.perDevice.report))}`, `reports vs N = ${s0.first.n}: ${all((r, f) => ratio(pdb(r.commit.perDevice.report), pdb(f.commit.perDevice.report)))}`);
      row('  the same without ref advertisements', (r) => fmt(r.commit.perDevice.bytesWithoutAdverts), `vs N = ${s0.first.n}: ${all((r, f) => ratio(r.commit.perDevice.bytesWithoutAdverts, f.commit.perDevice.bytesWithoutAdverts))}`);
      row('a report: one POST, bytes sent + answered', (r) => `${fmt(r.commit.perDevice.report.postBytesIn)} + ${fmt(r.commit.perDevice.report.postBytesOut)}`, `the note: ${all((r) => `${fmt(r.note.bytes)} B${r.note.signed ? ' signed' : ''}`)}`);
      row('receive-pack POSTs / device', (r) => fmt(r.commit.receivePackPostsPerDevice, 2), `2 (pending, success); extra POSTs ${all((r) => String(r.commit.collisions.extraPosts))}, non-200 ${all((r) => String(r.commit.collisions.non200))}, outbox retries ${all((r) => String(r.commit.collisions.outboxRetries))}`);
      row('advertisements asked: reports / looks', (r) => `${r.commit.reportAdverts} / ${r.commit.lookAdverts}`, `in the commit window (0 / 0: a report is one POST, a look one POST); in the quiet window, looks ${all((r) => String(r.quiet.noopPoll.lookGets))}`);
      row('advertisement: receive-pack info/refs', (r) => `${fmt(r.adverts.receivePackInfoRefs)} B`, `no longer asked by a report (only after a refused push); refs in the reports' repository ${all((r) => String(r.adverts.refsInReportsRepo))}`);
      row('advertisement: upload-pack v1 info/refs', (r) => `${fmt(r.adverts.uploadPackV1InfoRefs)} B`, `each fetch starts with it (isomorphic-git fetches in v1); refs in the followed repository ${all((r) => String(r.adverts.refsOnServer))}`);
      row('advertisement: upload-pack v2 info/refs', (r) => `${fmt(r.adverts.uploadPackV2InfoRefs)} B`, `an agent's first look only (capabilities only; ls-refs asks for refs/heads/main)`);
      row('start-up: requests / bytes per device', (r) => `${fmt(r.startup.perDevice.requests, 1)} / ${fmt(r.startup.perDevice.bytes)}`, 'first look, first fetch, the first commit\'s reports');
      if (rs.some((r) => r.enrolmentCommits)) {
        const e = (f) => (r) => (r.enrolmentCommits ? f(r.enrolmentCommits, r) : '—');
        const isOn = (r) => r.enrolment === 'on';
        // The same reports mode without enrolment, at this N: its README commit is the reference of the enrolment commit.
        const offOf = (r) => byMode[`${r.reports}/off`]?.find((x) => x.n === r.n);
        const vsOff = (r, pick) => (isOn(r) && offOf(r) ? ratio(pick(r.enrolmentCommits), pick(offOf(r).enrolmentCommits)) : '');
        row(
          'enrolment commit (off: README) fetch/device',
          e((x) => fmt(x.bulk.fetch.packBytes)),
          `pack, without the advertisement; on ÷ off ${all((r) => vsOff(r, (x) => x.bulk.fetch.packBytes) || '—')}; ${n} certificates, ${all(e((x, r) => (isOn(r) ? `${fmt((x.bulk.fetch.packBytes - (offOf(r)?.enrolmentCommits.bulk.fetch.packBytes ?? 0)) / n)} B more per certificate` : '—')))}`,
        );
        row(
          'one more (off: README) fetch/device',
          e((x) => fmt(x.single.fetch.packBytes)),
          `on ÷ off ${all((r) => vsOff(r, (x) => x.single.fetch.packBytes) || '—')}; one certificate (${all(e((x, r) => (isOn(r) ? `${fmt(x.single.certificateBytes)} B` : '—')))}), devices/ tree of ${n + 1} entries ${all(e((x, r) => (isOn(r) ? `${fmt(x.single.devicesTreeBytes)} B` : '—')))}`,
        );
        row(
          "a device's Git cache: start → → → end",
          (r) => (r.enrolmentCommits ? `${fmt(r.cachePackBytes.start / 1000, 1)}→${fmt(r.enrolmentCommits.bulk.cachePackBytes / 1000, 1)}→${fmt(r.enrolmentCommits.single.cachePackBytes / 1000, 1)}→${fmt(r.cachePackBytes.end / 1000, 1)}` : '—'),
          'kB of packs in dev-001\'s <state-dir>/git: after the first commit, the two commits above, the measured commit',
        );
        row('  those two commits: requests / device', e((x) => `${fmt(x.bulk.fetch.requests + x.bulk.report.requests, 2)}, ${fmt(x.single.fetch.requests + x.single.report.requests, 2)}`), 'fetch + reports, beside the look (as any commit)');
      }
      row('push → device reported success, p50', (r) => `${fmt(r.commit.reportedMs.p50)} ms`, `P/2 + apply p50 = ${all((r) => `${fmt(pollMs / 2 + r.commit.applyMs.p50)} ms`)}`);
      row('push → all reported (max)', (r) => `${fmt(r.commit.reportedMs.max)} ms`, `poll + apply (max) = ${all((r) => `${fmt(timeRef(r))} ms (${r.commit.reportedMs.max >= timeRef(r) ? '+' : '−'}${fmt(Math.abs(r.commit.reportedMs.max - timeRef(r)) / 1000, 1)} s)`)}; aim within +10 s`);
      row('  push → new revision (found), p50 / max', (r) => `${fmt(r.commit.newRevisionMs.p50)} / ${fmt(r.commit.newRevisionMs.max)}`, `apply p50 / max ${all((r) => `${fmt(r.commit.applyMs.p50)} / ${fmt(r.commit.applyMs.max)} ms`)}`);
      row('  applied → success note on the server, p50', (r) => `${fmt(r.commit.appliedToReportedMs.p50)} ms`, 'two pushes: pending, success (one POST each)');
      row('CPU: fleet / server, during the commit', (r) => `${fmt(r.commit.cpu.fleetPercent, 0)} / ${fmt(r.commit.cpu.serverPercent, 0)} %`, `of ${cpus().length} cores; quiet: ${all((r) => `${fmt(r.quiet.cpu.fleetPercent, 0)} / ${fmt(r.quiet.cpu.serverPercent, 0)} %`)}`);
      for (const [i, r] of rs.entries()) if (r.commit.noopLooksInWindowBeyondOne > 0) console.log(`  (${vLabel(variants[i])}: ${r.commit.noopLooksInWindowBeyondOne} no-op looks in the commit window, not counted)`);
    }
    if (enrolments.length === 2) {
      console.log(`\nper device, enrolment on ÷ off (the same N and reports mode, in the same run; aim ≤ 1.1 but for the enrolment commit itself):`);
      const keys = [
        ['no-op poll requests', 'noopPollRequests'],
        ['no-op poll bytes', 'noopPollBytes'],
        ['commit requests', 'commitRequests'],
        ['commit bytes', 'commitBytes'],
        ['  the look\'s bytes', 'lookBytes'],
        ['  the fetch\'s bytes', 'fetchBytes'],
        ['  the reports\' bytes', 'reportBytes'],
        ['a note (one device, one commit)', 'noteBytes'],
        ['start-up bytes (first fetch, first reports)', 'startupBytes'],
      ];
      const cols = modes.flatMap((m) => sizes.map((n) => ({ m, n })));
      console.log(`${''.padEnd(L)} ${cols.map(({ m, n }) => `${m === 'separate' ? 'sep' : m} N=${n}`.padStart(12)).join(' ')}`);
      for (const [label, k] of keys) console.log(`${label.padEnd(L)} ${cols.map(({ m, n }) => `×${fmt(onOff[m].find((x) => x.n === n)[k], 3)}`.padStart(12)).join(' ')}`);
    }
    console.log(`\nper-device cost, N = ${s0.last.n} ÷ N = ${s0.first.n} (aim ≤ 1.1):`);
    console.log(`${''.padEnd(L)} ${variants.map((v) => vLabel(v).padStart(W)).join(' ')}`);
    const ratioRow = (label, key) => console.log(`${label.padEnd(L)} ${variants.map((v) => `×${fmt(summaries[v.key].ratios[key], 3)}`.padStart(W)).join(' ')}`);
    ratioRow('no-op poll requests', 'perDeviceNoopPollRequests');
    ratioRow('no-op poll bytes', 'perDeviceNoopPollBytes');
    ratioRow('commit requests', 'perDeviceCommitRequests');
    ratioRow('commit bytes', 'perDeviceCommitBytes');
    ratioRow('  the look\'s bytes', 'perDeviceCommitLookBytes');
    ratioRow('  the fetch\'s bytes', 'perDeviceCommitFetchBytes');
    ratioRow('  the reports\' bytes', 'perDeviceCommitReportBytes');
    ratioRow('  commit bytes without advertisements', 'perDeviceCommitBytesWithoutAdverts');
    ratioRow('a note (one device, one commit)', 'noteBytes');
    console.log(`${'aim ≤ 1.1: commit / poll / reports'.padEnd(L)} ${variants.map((v) => `${summaries[v.key].aims.flatCommitCost ? 'met' : 'MISSED'} / ${summaries[v.key].aims.flatPollCost ? 'met' : 'MISSED'} / ${summaries[v.key].aims.flatReports ? 'met' : 'MISSED'}`.padStart(W)).join(' ')}`);
    for (const v of variants) {
      const { fit, fitUp, last } = summaries[v.key];
      console.log(
        `${vLabel(v)}: advertisements against the devices: receive-pack ≈ ${fmt(fit.intercept)} + ${fmt(fit.slope, 1)} B per device (r² ${fmt(fit.r2, 4)}; no longer in a report), ` +
          `upload-pack v1 ≈ ${fmt(fitUp.intercept)} + ${fmt(fitUp.slope, 1)} B per device (each fetch); ` +
          `time to all reported at N = ${last.n}: ${fmt(last.commit.reportedMs.max)} ms against poll + apply ${fmt(timeRef(last))} ms ` +
          `(aim within 10 s: ${summaries[v.key].aims.allReportedWithin10sOfPollPlusApply ? 'met' : 'MISSED'})`,
      );
    }
    for (const v of variants) {
      const { enrolFit: ef, first, last } = summaries[v.key];
      if (!ef) continue;
      console.log(
        `${vLabel(v)}: the enrolment commit (all N certificates) fetched by each device ≈ ${fmt(ef.bulkPackPerDevice.intercept)} + ${fmt(ef.bulkPackPerDevice.slope, 1)} B per device enrolled ` +
          `(r² ${fmt(ef.bulkPackPerDevice.r2, 4)}; ×${fmt(last.enrolmentCommits.bulk.fetch.packBytes / first.enrolmentCommits.bulk.fetch.packBytes, 2)} from N = ${first.n} to ${last.n}: grows with the fleet, once per enrolment); ` +
          `one more enrolment ≈ ${fmt(ef.singlePackPerDevice.intercept)} + ${fmt(ef.singlePackPerDevice.slope, 1)} B per device already enrolled (r² ${fmt(ef.singlePackPerDevice.r2, 4)}), ` +
          `the devices/ tree ≈ ${fmt(ef.devicesTree.intercept)} + ${fmt(ef.devicesTree.slope, 1)} B per certificate`,
      );
    }
    for (const v of variants)
      for (const r of byMode[v.key]) {
        if (r.commit.outcomes.some((o) => o !== 'all components running')) console.log(`warning: N = ${r.n} (${v.key}): outcomes ${r.commit.outcomes.join(', ')}`);
        for (const [w, { count, afterPush, example }] of Object.entries(r.warnings))
          console.log(`warning: N = ${r.n} (${v.key}): agents logged "${w}" ${count} time(s), ${afterPush} after the push${example ? `, e.g. ${example}` : ''}`);
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
          enrolments,
          commands: {
            same: agentCommand,
            separate: `${agentCommand.replace('fleet-N.git', 'fleet-N-sep.git')} --status-repo http://127.0.0.1:PORT/reports-N.git`,
            enrolmentOn:
              'before the first start: keystone identity --json --state-dir FRESH --device dev-NNN > dev-NNN.json; keystonectl enroll --key enroll.key ' +
              '--identity dev-NNN.json --out devices/dev-NNN.cert (committed after the fleet is up on the first commit, not re-signed); the agent as above ' +
              'with --enrollment-key enroll.pub (repositories fleet-N-enr.git, fleet-N-sep-enr.git, reports-N-enr.git)',
          },
          measure:
            'requests and bytes served by git http-backend (src/dev/git-http-server.ts records), split by kind: look = protocol v2 upload-pack ' +
            '(a poll: one ls-refs POST, counted by its POST), fetch = v1 upload-pack, report = receive-pack (one POST, no advertisement; and ' +
            'anything asked of a reports repository); a commit costs its fetches and ' +
            'reports plus one look per device. reportedMs: from `git push` returning to the bench seeing the device\'s success note on the bare ' +
            'repository the reports go to (polled every ~200 ms). advertisementFit: bytes against the number of devices. enrolmentCommits (enrolment ' +
            'on): bulk = the commit adding every device\'s certificate, single = one certificate more; enrolment off: two commits of a README ' +
            'line in their place (readme: true), the reference; fetch.packBytes = the fetch without its advertisement, per device. ' +
            'Enrolment off is not unsigned: this version signs every report whatever the flags.',
          references: {
            flat: `per-device cost at N = ${s0.last.n} ÷ at N = ${s0.first.n}, aim ≤ 1.1`,
            enrolment: 'per device, enrolment on ÷ off at the same N and reports mode, same run; aim ≤ 1.1 (the enrolment commit itself apart)',
            timeToAllReported: 'one poll interval + the slowest apply, aim: the last report within 10 s of it',
          },
          enrolmentOnOff: onOff,
          byVariant: Object.fromEntries(
            variants.map((v) => [
              v.key,
              {
                reports: v.mode,
                enrolment: v.enrolment,
                ratios: summaries[v.key].ratios,
                aims: summaries[v.key].aims,
                advertisementFit: { receivePack: summaries[v.key].fit, uploadPackV1: summaries[v.key].fitUp },
                ...(summaries[v.key].enrolFit && { enrolmentFit: summaries[v.key].enrolFit }),
                bySize: byMode[v.key].map((r) => ({ ...r, perDevice: r.perDevice.map((d) => Object.fromEntries(Object.entries(d).map(([k, x]) => [k, typeof x === 'number' ? round(x, 1) : x]))) })),
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
