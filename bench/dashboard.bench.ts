// Benchmark of the device dashboard (issue 19) in a real browser: Debian's Chromium driven by playwright-core against
// the real agent, a fresh browser context (cold cache) for every visit, N runs, medians. Aims (issue 19): under 150 KB
// transferred in all, first paint under 300 ms on this machine. Run by hand (`npm run bench -- dashboard`, which
// builds first; the page is dist/web); it asserts no timing, it reports (and exits non-zero only when the page does
// not work: no login form, a table that never fills, a file of the page's own that does not load). ~45 s.
//
// The stack: by default the example's four components (plans/edge-processes.toml: influxdb, api, telemetry, web, run
// by the stand-ins of artifacts/), copied with recipes/ plans/ artifacts/ to a temp directory, their fixed ports
// 18086-18088 moved to --port-base + 2…4; with --components N, N generated stand-ins (lib/stand-in.ts) as a seeded layered
// DAG (generate-repo.ts's model: hard and ordering edges), so the table and the graph have N rows and nodes.
//
// Each run, in this order, each in its own fresh context of one browser (one unrecorded floor visit first, for the
// browser's own first-context start-up; a 1 s pause before every visit, so that none lands on the previous one's
// teardown; the browser's DevTools network recording on in all three):
//   floor      a minimal static HTML page (a line of text) from a plain node:http server on loopback: its first
//              contentful paint is the browser's own floor, the reference of the times below.
//   login      GET / without a session: the login form. Bytes until the form is there and no request is pending.
//   overview   GET / with a session (POST /v1/session with the token from Node, its Set-Cookie added to the context
//              and its CSRF token put in the page's localStorage): the signed-in overview, until every component has its row in `#components` and the
//              graph `#graph g.node` is drawn, then until no request but the event stream is pending.
// Bytes: what Chromium counts on the wire per request (DevTools Network.loadingFinished encodedDataLength: headers
// plus the compressed body; for the event stream, still open, its headers plus the chunks received so far), split
// into the page's own files (HTML/JS/CSS: `/`, `/assets/*`) and API data (`/v1/*`: JSON and the event stream).
// KB = 1,000 bytes. Reference: the 150 KB aim.
// Times (ms since navigation start, the page's performance.now()): first contentful paint
// (performance.getEntriesByName('first-contentful-paint')), and the moments the table has every row and the graph
// every node (page.waitForFunction polled at every animation frame, so within a frame of the DOM change); beside
// them, when each response ended (Resource Timing), to show where the time goes. Notes: console errors (the login
// page's expected 401 on GET /v1/session aside), requests answered with an error, URLs fetched twice in one visit.
// Agent RSS (VmRSS, the median of samples over 2 s): once the stack runs, before any page was loaded, and after the N
// runs (the page's files are read on their first request and kept, and each run signs in a new session).
//
// Options: --runs 7  --components example|N (N generated stand-ins, e.g. 30)  --port-base 24000 (the API on it, the
//          floor server on +1, the example's three ports on +2…+4, generated stand-ins from +10; below Linux's
//          ephemeral range)  --chromium /usr/bin/chromium  --screenshot FILE (a PNG of the last overview, full page)
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { chromium, type Browser } from 'playwright-core';
import { API_TOKEN_FILE } from '../dist/api/api-token.js';
import { oddNotes } from './dashboard/notes.js';
import {
  AIM_BYTES,
  AIM_FCP_MS,
  CHROMIUM_ARGS,
  EXAMPLE,
  FLOOR_HTML,
  KB,
  MiB,
  N_GENERATED,
  opts,
  PAUSE_MS,
  PORT_BASE,
  resultsFile,
  RUNS,
} from './dashboard/options.js';
import { copyExample, expectedView, generatedComponents, rssOver, signIn } from './dashboard/stack.js';
import { visitFloor, visitLogin, visitOverview, type Run } from './dashboard/visits.js';
import { busyNote, load1, machine, othersCpu, resultsHead } from './lib/machine.js';
import { benchDir, ensureDir, projectDir } from './lib/paths.js';
import { assertPortsFree } from './lib/ports.js';
import { writeProcessRepo } from './lib/process-repo.js';
import { cleanUpOnSignal, killStragglers } from './lib/processes.js';
import { writeStandIn } from './lib/stand-in.js';
import { startAgent, type Agent } from './lib/start-agent.js';
import { fmt, median, ratio, round, sleep } from './lib/stats.js';

if (!existsSync(join(projectDir, 'dist', 'web', 'index.html'))) {
  console.error('dist/web/index.html is missing: run `npm run build` first (it bundles web/ into dist/web/)');
  process.exit(1);
}
const work = mkdtempSync(join(tmpdir(), 'keystone-bench-dashboard-'));
cleanUpOnSignal(work, () => rmSync(work, { recursive: true, force: true }));
const others = othersCpu(work);
const loadBefore = load1();
const t0 = performance.now();
const apiPort = PORT_BASE;
const floorPort = PORT_BASE + 1;
const examplePorts = [PORT_BASE + 2, PORT_BASE + 3, PORT_BASE + 4];
let agent: Agent | undefined;
let browser: Browser | undefined;
let floorServer: Server | undefined;
let failed = false;
try {
  const repo = join(work, 'repo');
  let plan: string;
  let stackPorts: number[];
  if (EXAMPLE) {
    plan = copyExample(repo, examplePorts);
    stackPorts = examplePorts;
  } else {
    const all = generatedComponents(N_GENERATED);
    plan = writeProcessRepo(repo, all, writeStandIn(join(work, 'bin')));
    stackPorts = all.map((c) => c.port);
  }
  await assertPortsFree([apiPort, floorPort, ...stackPorts]);

  floorServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' });
    res.end(FLOOR_HTML);
  });
  await new Promise<void>((resolve, reject) =>
    floorServer!.once('error', reject).listen(floorPort, '127.0.0.1', resolve),
  );
  const floorUrl = `http://127.0.0.1:${floorPort}/`;

  const stateDir = join(work, 'state');
  agent = startAgent({ repo, plan, stateDir, concurrency: 64, extraArgs: ['--listen', `127.0.0.1:${apiPort}`] });
  process.stderr.write(
    `starting the agent on ${EXAMPLE ? "the example's 4 components" : `${N_GENERATED} stand-ins`}… `,
  );
  await agent.waitFor((e) => e.msg === 'all components running', 120_000, '"all components running"');
  const origin = `http://127.0.0.1:${apiPort}`;
  const token = readFileSync(join(stateDir, API_TOKEN_FILE), 'utf8').trim();
  const expected = await expectedView(origin, token);
  process.stderr.write(`${expected.rows.length} rows, ${expected.nodes} graph nodes; `);
  await sleep(1000);
  const rssBefore = await rssOver(agent.pid, 2000);
  process.stderr.write(`RSS ${fmt(MiB(rssBefore), 1)} MiB\n`);

  browser = await chromium.launch({
    executablePath: opts.chromium,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
  });
  const browserVersion = browser.version();
  // One unrecorded visit of the floor page: the browser's own first-context start-up (it never touches the agent).
  await visitFloor(browser, floorUrl);

  const runs: Run[] = [];
  // Each visit starts on a quiet browser: the previous context's teardown (its renderer exits) lands in the pause.
  const pause = () => sleep(PAUSE_MS);
  for (let r = 0; r < RUNS; r++) {
    await pause();
    const floor = await visitFloor(browser, floorUrl);
    await pause();
    const login = await visitLogin(browser, origin);
    if (login.fileRequests < 2) throw new Error(`the login page loaded ${login.fileRequests} file(s)`);
    const session = await signIn(origin, token);
    await pause();
    const overview = await visitOverview(
      browser,
      origin,
      session,
      expected,
      r === RUNS - 1 ? opts.screenshot : undefined,
    );
    runs.push({ floor, login, overview });
    console.log(
      `run ${r + 1}: floor FCP ${fmt(floor.fcpMs, 1)} ms | login ${fmt(KB(login.totalBytes), 1)} KB, FCP ${fmt(login.fcpMs, 1)} ms | ` +
        `overview ${fmt(KB(overview.totalBytes), 1)} KB (files ${fmt(KB(overview.fileBytes), 1)}, API ${fmt(KB(overview.apiBytes), 1)}), ` +
        `FCP ${fmt(overview.fcpMs, 1)} ms, table ${fmt(overview.tableMs, 1)} ms, graph ${fmt(overview.graphMs, 1)} ms`,
    );
  }
  await sleep(1000);
  const rssAfter = await rssOver(agent.pid, 2000);
  const loadAfter = load1();
  const othersPercent = others.percent();

  const med = (f: (x: Run) => number) => median(runs.map(f));
  const last = runs[runs.length - 1]!;
  const s = {
    floorFcpMs: med((x) => x.floor.fcpMs),
    login: {
      totalBytes: med((x) => x.login.totalBytes),
      fileBytes: med((x) => x.login.fileBytes),
      apiBytes: med((x) => x.login.apiBytes),
      fcpMs: med((x) => x.login.fcpMs),
      formMs: med((x) => x.login.formMs),
    },
    overview: {
      totalBytes: med((x) => x.overview.totalBytes),
      fileBytes: med((x) => x.overview.fileBytes),
      apiBytes: med((x) => x.overview.apiBytes),
      jsonBytes: med((x) => x.overview.jsonBytes),
      streamBytes: med((x) => x.overview.streamBytes),
      fcpMs: med((x) => x.overview.fcpMs),
      tableMs: med((x) => x.overview.tableMs),
      graphMs: med((x) => x.overview.graphMs),
    },
  };
  const range = (f: (x: Run) => number) => `${fmt(Math.min(...runs.map(f)), 1)}–${fmt(Math.max(...runs.map(f)), 1)}`;
  const stack = EXAMPLE
    ? `the example stack (plans/edge-processes.toml: ${expected.rows.join(', ')})`
    : `${N_GENERATED} generated stand-ins (${expected.rows.length} rows)`;

  console.log(
    `\ndashboard benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}, Chromium ${browserVersion}; ${stack}; median of ${RUNS} runs, a fresh context (cold cache) each`,
  );
  console.log(
    '\ntransferred on a first visit (KB = 1,000 bytes on the wire: headers + compressed bodies, as Chromium counts them)',
  );
  console.log(
    `  ${''.padEnd(30)} ${'page files (HTML/JS/CSS)'.padStart(26)} ${'API data (JSON, events)'.padStart(25)} ${'total'.padStart(10)}   vs 150 KB aim`,
  );
  const bytesRow = (label: string, key: 'login' | 'overview') => {
    const x = s[key];
    const l = last[key];
    const aim = `${ratio(x.totalBytes, AIM_BYTES)} ${x.totalBytes < AIM_BYTES ? 'met' : 'NOT met'}`;
    console.log(
      `  ${label.padEnd(30)} ${`${fmt(KB(x.fileBytes), 1)} KB (${l.fileRequests} req)`.padStart(26)} ${`${fmt(KB(x.apiBytes), 1)} KB (${l.apiRequests} req)`.padStart(25)} ${`${fmt(KB(x.totalBytes), 1)} KB`.padStart(10)}   ${aim}`,
    );
  };
  bytesRow('login page (no session)', 'login');
  bytesRow('signed-in overview', 'overview');
  console.log(
    `  overview API data: JSON ${fmt(KB(s.overview.jsonBytes), 1)} KB, event stream ${fmt(KB(s.overview.streamBytes), 1)} KB so far (open)`,
  );
  console.log(
    '  overview requests (last run): ' +
      last.overview.requests
        .map(
          (r) =>
            `${r.method === 'GET' ? '' : `${r.method} `}${r.path} ${r.status ?? '—'}${r.encoding ? ` ${r.encoding}` : ''} ${fmt(r.bytes)} B`,
        )
        .join(', '),
  );

  console.log('\ntime, ms since navigation start            median     min–max     vs the floor   aim');
  const timeRow = (label: string, x: number, f: (x: Run) => number, aim?: string) =>
    console.log(
      `  ${label.padEnd(40)} ${fmt(x, 1).padStart(7)}   ${range(f).padStart(13)}   ${ratio(x, s.floorFcpMs).padStart(10)}     ${aim ?? ''}`,
    );
  timeRow('floor: static page, first paint (ref.)', s.floorFcpMs, (x) => x.floor.fcpMs);
  timeRow(
    'login page, first contentful paint',
    s.login.fcpMs,
    (x) => x.login.fcpMs,
    `< ${AIM_FCP_MS} ms ${s.login.fcpMs < AIM_FCP_MS ? 'met' : 'NOT met'}`,
  );
  timeRow(
    'overview, first contentful paint',
    s.overview.fcpMs,
    (x) => x.overview.fcpMs,
    `< ${AIM_FCP_MS} ms ${s.overview.fcpMs < AIM_FCP_MS ? 'met' : 'NOT met'}`,
  );
  timeRow(
    'overview, components table filled',
    s.overview.tableMs,
    (x) => x.overview.tableMs,
    `(${ratio(s.overview.tableMs, AIM_FCP_MS)} of ${AIM_FCP_MS} ms)`,
  );
  timeRow('overview, dependency graph drawn', s.overview.graphMs, (x) => x.overview.graphMs);

  const timelineLine = (key: 'login' | 'overview', extra: [string, number][]) => {
    const keys = Object.keys(last[key].timeline).filter((k) => runs.every((x) => Number.isFinite(x[key].timeline[k])));
    const points = [
      ...keys.map((k): [string, number] => [
        k.replace(/^\/assets\/([a-z]+)-[A-Z0-9]+(\.[a-z]+)$/, '$1$2'),
        med((x) => x[key].timeline[k]!),
      ]),
      ...extra,
    ].sort((a, b) => a[1] - b[1]);
    return points.map(([k, v]) => `${k} ${fmt(v)}`).join(', ');
  };
  console.log(`  where the time goes (median ms at which each response ended):`);
  console.log(
    `    login:    ${timelineLine('login', [
      ['FCP', s.login.fcpMs],
      ['form', s.login.formMs],
    ])}`,
  );
  console.log(
    `    overview: ${timelineLine('overview', [
      ['FCP', s.overview.fcpMs],
      ['table', s.overview.tableMs],
      ['graph', s.overview.graphMs],
    ])}`,
  );

  console.log(
    `\nagent RSS: ${fmt(MiB(rssBefore), 1)} MiB before any page, ${fmt(MiB(rssAfter), 1)} MiB after ${RUNS} runs (${RUNS * 2} page loads, ${RUNS} sessions): ${rssAfter >= rssBefore ? '+' : ''}${fmt(MiB(rssAfter - rssBefore), 1)} MiB, ${ratio(rssAfter, rssBefore)}`,
  );

  const odd = oddNotes(runs, last);
  for (const o of odd) console.log(`note: ${o}`);
  const note = busyNote(othersPercent, loadBefore, loadAfter);
  if (note) console.log(note);
  if (opts.screenshot) console.log(`screenshot of the last overview: ${opts.screenshot}`);
  // A page whose own files did not all load does not work, whatever it managed to draw.
  const brokenFiles = [
    ...new Set(
      runs
        .flatMap((x) => [...x.login.requests, ...x.overview.requests])
        .filter((r) => !r.path.startsWith('/v1/') && (r.failed || !(r.status! < 400)))
        .map((r) => `${r.path} ${r.status ?? r.failed}`),
    ),
  ];
  if (brokenFiles.length) {
    failed = true;
    console.error(
      `dashboard bench failed: the page's own files did not all load: ${brokenFiles.join(', ')}${brokenFiles.some((b) => / 40[14]$/.test(b)) ? ' (was dist/web rebuilt after the agent started? it reads manifest.json at its start)' : ''}`,
    );
  }

  ensureDir(join(benchDir, 'results'));
  const r1 = (x: number) => round(x, 1);
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        ...resultsHead('dashboard', { loadBefore, loadAfter, othersPercent }),
        chromium: browserVersion,
        stack: EXAMPLE ? 'example (plans/edge-processes.toml)' : `${N_GENERATED} generated stand-ins`,
        rows: expected.rows,
        graphNodes: expected.nodes,
        runs: RUNS,
        aims: { transferredBytes: AIM_BYTES, firstPaintMs: AIM_FCP_MS },
        measures: {
          bytes:
            'DevTools Network.loadingFinished encodedDataLength per request (headers + compressed body); the open event stream: its headers + the chunks received so far',
          fileBytes: 'GET / and /assets/* (HTML, JS, CSS)',
          apiBytes: '/v1/* (JSON and the event stream)',
          fcpMs: "performance.getEntriesByName('first-contentful-paint')[0].startTime",
          tableMs:
            "performance.now() at the first animation frame where every component has its '#components tr[data-component]' row",
          graphMs: "performance.now() at the first animation frame where '#graph g.node' has every node",
          floorFcpMs:
            'the first contentful paint of a minimal static HTML page from a plain node:http server on loopback, same browser, a fresh context',
          rssKiB: "the agent's VmRSS, the median of samples every 250 ms over 2 s",
        },
        summary: {
          floorFcpMs: r1(s.floorFcpMs),
          login: Object.fromEntries(Object.entries(s.login).map(([k, v]) => [k, r1(v)])),
          overview: Object.fromEntries(Object.entries(s.overview).map(([k, v]) => [k, r1(v)])),
          agentRssKiB: { before: rssBefore, after: rssAfter },
        },
        perRun: runs.map((x) => ({
          floorFcpMs: r1(x.floor.fcpMs),
          login: {
            fcpMs: r1(x.login.fcpMs),
            formMs: r1(x.login.formMs),
            totalBytes: x.login.totalBytes,
            fileBytes: x.login.fileBytes,
            apiBytes: x.login.apiBytes,
            responseEndMs: x.login.timeline,
          },
          overview: {
            fcpMs: r1(x.overview.fcpMs),
            tableMs: r1(x.overview.tableMs),
            graphMs: r1(x.overview.graphMs),
            totalBytes: x.overview.totalBytes,
            fileBytes: x.overview.fileBytes,
            apiBytes: x.overview.apiBytes,
            jsonBytes: x.overview.jsonBytes,
            streamBytes: x.overview.streamBytes,
            responseEndMs: x.overview.timeline,
          },
        })),
        lastRunRequests: { login: last.login.requests, overview: last.overview.requests },
        notes: odd,
        brokenFiles,
        benchSeconds: +((performance.now() - t0) / 1000).toFixed(1),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(
    `\nresults: ${relative(process.cwd(), resultsFile)} (bench took ${fmt((performance.now() - t0) / 1000)} s)`,
  );
} catch (err) {
  failed = true;
  console.error(`dashboard bench failed: ${(err as Error).stack ?? (err as Error).message}`);
} finally {
  await browser?.close().catch(() => undefined);
  floorServer?.closeAllConnections();
  floorServer?.close();
  if (agent) {
    await agent.stop();
    await killStragglers([agent.pid, ...agent.componentPids()], work);
  }
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
