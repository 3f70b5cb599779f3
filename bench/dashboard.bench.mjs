/* global fetch, window, document */
// Benchmark of the device dashboard (issue 19) in a real browser: Debian's Chromium driven by playwright-core against
// the real agent, a fresh browser context (cold cache) for every visit, N runs, medians. Aims (issue 19): under 150 KB
// transferred in all, first paint under 300 ms on this machine. Run by hand (`npm run bench -- dashboard`, which
// builds first; the page is dist/web); it asserts no timing, it reports (and exits non-zero only when the page does
// not work: no login form, a table that never fills, a file of the page's own that does not load). ~45 s.
//
// The stack: by default the example's four components (plans/edge-processes.toml: influxdb, api, telemetry, web, run
// by the stand-ins of artifacts/), copied with recipes/ plans/ artifacts/ to a temp directory, their fixed ports
// 18086-18088 moved to --port-base + 2…4; with --components N, N generated stand-ins (harness.mjs) as a seeded layered
// DAG (generate-repo.mjs's model: hard and ordering edges), so the table and the graph have N rows and nodes.
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
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { API_TOKEN_FILE } from '../dist/api/api-token.js';
import { SESSION_COOKIE } from '../dist/api/dashboard-sessions.js';
import { modelRepo } from './generate-repo.mjs';
import {
  assertPortsFree,
  benchDir,
  busyNote,
  cleanUpOnSignal,
  ensureDir,
  fmt,
  killStragglers,
  load1,
  machine,
  median,
  mulberry32,
  othersCpu,
  projectDir,
  ratio,
  resultsHead,
  round,
  rssKiB,
  sleep,
  startAgent,
  writeProcessRepo,
  writeStandIn,
} from './harness.mjs';

const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    components: { type: 'string', default: 'example' },
    'port-base': { type: 'string', default: '24000' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    screenshot: { type: 'string' },
  },
});
const RUNS = Number(opts.runs);
const EXAMPLE = opts.components === 'example';
const N_GENERATED = EXAMPLE ? 0 : Number(opts.components);
const PORT_BASE = Number(opts['port-base']);
if (!Number.isInteger(RUNS) || RUNS < 1 || (!EXAMPLE && !(Number.isInteger(N_GENERATED) && N_GENERATED >= 1 && N_GENERATED <= 500)) || !Number.isInteger(PORT_BASE)) {
  console.error('usage: node bench/dashboard.bench.mjs [--runs 7] [--components example|N] [--port-base 24000] [--chromium /usr/bin/chromium] [--screenshot FILE]');
  process.exit(2);
}
const AIM_BYTES = 150_000;
const AIM_FCP_MS = 300;
const KB = (b) => b / 1000;
const MiB = (kib) => kib / 1024;
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const EXAMPLE_PORTS = ['18086', '18087', '18088'];
const PAGE_TIMEOUT_MS = 30_000;
/** Between two visits. */
const PAUSE_MS = 1000;
const resultsFile = join(benchDir, 'results', 'dashboard.json');
const FLOOR_HTML = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>floor</title></head><body><p>Keystone</p></body></html>';

// ─── the stack ──────────────────────────────────────────────────────────────────────────────────────────

/** The example's recipes, plans and stand-ins in `dir`, its fixed ports moved to `ports`. */
function copyExample(dir, ports) {
  for (const d of ['recipes', 'plans', 'artifacts']) cpSync(join(projectDir, d), join(dir, d), { recursive: true });
  for (const f of readdirSync(join(dir, 'recipes'))) {
    const path = join(dir, 'recipes', f);
    let text = readFileSync(path, 'utf8');
    EXAMPLE_PORTS.forEach((fixed, i) => (text = text.replaceAll(fixed, String(ports[i]))));
    writeFileSync(path, text);
  }
  return 'plans/edge-processes.toml';
}

/** N stand-ins as a layered DAG (the convergence bench's shape), short delays, a tcp/http check every second. */
function generatedComponents(n) {
  const model = modelRepo({ n, seed: 19 });
  const rand = mulberry32(19 * 7919 + n);
  const name = (i) => `s${String(i).padStart(2, '0')}`;
  return model.components.map((c) => ({
    name: name(c.index),
    port: PORT_BASE + 10 + c.index,
    delay: 50 + Math.floor(rand() * 250),
    check: rand() < 0.5 ? 'http' : 'tcp',
    interval: '1s',
    timeout: '1s',
    threshold: 30,
    dependencies: c.dependencies.map((d) => ({ on: name(d.on), type: d.type })),
  }));
}

/** VmRSS of `pid`, the median of a sample every 250 ms over `ms`. */
async function rssOver(pid, ms) {
  const samples = [];
  for (let t = 0; t < ms; t += 250) {
    const r = rssKiB(pid);
    if (r !== undefined) samples.push(r);
    await sleep(250);
  }
  return median(samples);
}

/** Signs in from Node as the page would (POST /v1/session): the session cookie for context.addCookies, and the CSRF token the page keeps in localStorage. */
async function signIn(origin, token) {
  const res = await fetch(`${origin}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  if (res.status !== 200) throw new Error(`POST /v1/session answered ${res.status}: ${await res.text()}`);
  const cookies = [];
  for (const line of res.headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const a = new Map(attrs.map((x) => [x.split('=')[0].toLowerCase(), x.includes('=') ? x.slice(x.indexOf('=') + 1) : true]));
    cookies.push({
      name,
      value: decodeURIComponent(pair.slice(eq + 1)),
      domain: '127.0.0.1',
      path: a.get('path') ?? '/',
      httpOnly: a.has('httponly'),
      secure: a.has('secure'),
      sameSite: 'Strict',
      ...(a.has('max-age') && { expires: Math.floor(Date.now() / 1000) + Number(a.get('max-age')) }),
    });
  }
  if (!cookies.some((c) => c.name === SESSION_COOKIE)) throw new Error(`POST /v1/session set no ${SESSION_COOKIE} cookie (Set-Cookie: ${res.headers.getSetCookie().join(' | ')})`);
  const { csrf } = await res.json();
  if (typeof csrf !== 'string' || !csrf) throw new Error('POST /v1/session answered no csrf');
  return { cookies, csrf };
}

/** The row names the table must show (group members have rows of their own) and the graph's node count. */
async function expectedView(origin, token) {
  const get = async (path) => {
    const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  const [components, graph] = await Promise.all([get('/v1/components'), get('/v1/graph')]);
  const rows = components.flatMap((c) => [c.name, ...(c.members ?? []).map((m) => m.name)]);
  return { rows, nodes: graph.layers.flat().length };
}

// ─── the browser side ───────────────────────────────────────────────────────────────────────────────────

/** Every request of `page` as DevTools sees it (from before the navigation), with its bytes on the wire. */
async function recordNetwork(context, page) {
  const cdp = await context.newCDPSession(page);
  const requests = new Map();
  const rec = (id) => {
    let r = requests.get(id);
    if (!r) requests.set(id, (r = { url: '', method: '', headerBytes: 0, chunkBytes: 0, finished: false }));
    return r;
  };
  cdp.on('Network.requestWillBeSent', (e) => Object.assign(rec(e.requestId), { url: e.request.url, method: e.request.method, type: e.type }));
  cdp.on('Network.responseReceived', (e) => {
    const headers = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    Object.assign(rec(e.requestId), { status: e.response.status, mimeType: e.response.mimeType, encoding: headers['content-encoding'], headerBytes: e.response.encodedDataLength ?? 0 });
  });
  cdp.on('Network.dataReceived', (e) => (rec(e.requestId).chunkBytes += e.encodedDataLength ?? 0));
  cdp.on('Network.loadingFinished', (e) => Object.assign(rec(e.requestId), { wireBytes: e.encodedDataLength, finished: true }));
  cdp.on('Network.loadingFailed', (e) => Object.assign(rec(e.requestId), { failed: e.errorText, finished: true }));
  await cdp.send('Network.enable');
  const isStream = (r) => r.mimeType === 'text/event-stream';
  return {
    requests,
    /** Resolves once nothing but an event stream has been pending for `quietMs` (at most `maxMs`). */
    async settled(quietMs = 250, maxMs = 10_000) {
      const t0 = performance.now();
      let quietSince = performance.now();
      let count = requests.size;
      while (performance.now() - t0 < maxMs) {
        const pending = [...requests.values()].some((r) => !r.finished && !isStream(r));
        if (pending || requests.size !== count) {
          quietSince = performance.now();
          count = requests.size;
        } else if (performance.now() - quietSince >= quietMs) return true;
        await sleep(25);
      }
      return false;
    },
    /** Bytes by kind: the page's files vs API data (JSON, the event stream), and the list of requests. */
    tally(origin) {
      const list = [...requests.values()].map((r) => {
        const path = r.url.startsWith(origin) ? r.url.slice(origin.length).split('?', 1)[0] : r.url;
        const stream = isStream(r);
        const bytes = r.finished ? (r.wireBytes ?? 0) : r.headerBytes + r.chunkBytes;
        return { path, method: r.method, status: r.status, type: r.mimeType, encoding: r.encoding, bytes, ...(stream && { stream: true, open: !r.finished }), ...(r.failed && { failed: r.failed }) };
      });
      const sum = (xs) => xs.reduce((n, r) => n + r.bytes, 0);
      const api = list.filter((r) => r.path.startsWith('/v1/'));
      const files = list.filter((r) => !r.path.startsWith('/v1/'));
      return {
        totalBytes: sum(list),
        fileBytes: sum(files),
        fileRequests: files.length,
        apiBytes: sum(api),
        apiRequests: api.length,
        jsonBytes: sum(api.filter((r) => !r.stream)),
        streamBytes: sum(api.filter((r) => r.stream)),
        requests: list,
      };
    },
  };
}

/** A fresh context (cold cache) with one page, console errors and page errors collected. */
async function freshPage(browser, session) {
  const context = await browser.newContext();
  if (session) {
    await context.addCookies(session.cookies);
    // Where the page keeps the CSRF token (web/src/api-client.ts), set before its scripts run.
    await context.addInitScript((csrf) => {
      try {
        window.localStorage.setItem('keystone.csrf', csrf);
      } catch {
        // about:blank and other documents without storage of their own.
      }
    }, session.csrf);
  }
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  return { context, page, errors };
}

/** The page's first contentful paint (ms since navigation start), once the browser has recorded it. */
const fcpOf = (page) =>
  page
    .waitForFunction(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? false, undefined, { polling: 'raf', timeout: PAGE_TIMEOUT_MS })
    .then((h) => h.jsonValue());

/** When each request of the page ended (ms since navigation start, Resource Timing), by path: where the time goes. */
const timelineOf = (page, origin) =>
  page.evaluate((origin) => {
    const nav = performance.getEntriesByType('navigation')[0];
    const out = { document: nav ? Math.round(nav.responseEnd * 10) / 10 : null, domContentLoaded: nav ? Math.round(nav.domContentLoadedEventEnd * 10) / 10 : null };
    for (const e of performance.getEntriesByType('resource')) {
      const key = e.name.startsWith(origin) ? e.name.slice(origin.length).split('?', 1)[0] : e.name;
      out[key in out ? `${key} (again)` : key] = Math.round(e.responseEnd * 10) / 10;
    }
    return out;
  }, origin);

async function visitFloor(browser, url) {
  const { context, page } = await freshPage(browser);
  try {
    // Recorded as the dashboard's visits are, so that DevTools' own cost is in the floor too.
    const net = await recordNetwork(context, page);
    await page.goto(url, { waitUntil: 'commit' });
    const fcpMs = await fcpOf(page);
    return { fcpMs, totalBytes: net.tally(new URL(url).origin).totalBytes };
  } finally {
    await context.close();
  }
}

async function visitLogin(browser, origin) {
  const { context, page, errors } = await freshPage(browser);
  try {
    const net = await recordNetwork(context, page);
    await page.goto(`${origin}/`, { waitUntil: 'commit' });
    const formMs = await page
      .waitForFunction(() => (document.querySelector('form#login input[name="token"]') ? performance.now() : false), undefined, { polling: 'raf', timeout: PAGE_TIMEOUT_MS })
      .then((h) => h.jsonValue())
      .catch(async (err) => {
        const text = await page.evaluate(() => document.body?.innerText.slice(0, 400) ?? '').catch(() => '?');
        const list = net.tally(origin).requests;
        const reqs = list.map((r) => `${r.path} ${r.status ?? r.failed ?? 'pending'}`).join(', ');
        // The agent reads manifest.json once, at its start, and index.html on the first request: a rebuild in between
        // gives a page whose entry the old manifest does not list as public (401).
        const hint = list.some((r) => r.path.startsWith('/assets/') && r.status === 401) ? ' (an asset of the login page answered 401: was dist/web rebuilt after the agent started?)' : '';
        throw new Error(`the login page showed no form#login within ${PAGE_TIMEOUT_MS} ms${hint} (text: ${JSON.stringify(text)}; requests: ${reqs}; errors: ${errors.join(' | ') || 'none'}): ${err.message}`);
      });
    const fcpMs = await fcpOf(page);
    const settled = await net.settled();
    return { fcpMs, formMs, settled, timeline: await timelineOf(page, origin), ...net.tally(origin), errors };
  } finally {
    await context.close();
  }
}

async function visitOverview(browser, origin, session, expected, screenshot) {
  const { context, page, errors } = await freshPage(browser, session);
  try {
    const net = await recordNetwork(context, page);
    await page.goto(`${origin}/`, { waitUntil: 'commit' });
    let seen;
    try {
      seen = await page
        .waitForFunction(
          ({ rows, nodes }) => {
            const w = window;
            const now = performance.now();
            const have = new Set([...document.querySelectorAll('#components tr[data-component]')].map((tr) => tr.getAttribute('data-component')));
            if (w.ksTableAt === undefined && rows.every((r) => have.has(r))) w.ksTableAt = now;
            if (w.ksGraphAt === undefined && document.querySelectorAll('#graph g.node').length >= nodes) w.ksGraphAt = now;
            return w.ksTableAt !== undefined && w.ksGraphAt !== undefined && { tableMs: w.ksTableAt, graphMs: w.ksGraphAt };
          },
          expected,
          { polling: 'raf', timeout: PAGE_TIMEOUT_MS },
        )
        .then((h) => h.jsonValue());
    } catch (err) {
      const shown = await page.evaluate(() => ({
        rows: document.querySelectorAll('#components tr[data-component]').length,
        nodes: document.querySelectorAll('#graph g.node').length,
        text: document.body.innerText.slice(0, 400),
      }));
      throw new Error(`the overview did not show ${expected.rows.length} rows and ${expected.nodes} graph nodes within ${PAGE_TIMEOUT_MS} ms (it shows ${shown.rows} rows, ${shown.nodes} nodes; text: ${JSON.stringify(shown.text)}; errors: ${errors.join(' | ') || 'none'}): ${err.message}`);
    }
    const fcpMs = await fcpOf(page);
    const settled = await net.settled();
    const view = await page.evaluate(() => {
      return {
        states: Object.fromEntries([...document.querySelectorAll('#components tr[data-component]')].map((tr) => [tr.getAttribute('data-component'), tr.getAttribute('data-state')])),
        edges: document.querySelectorAll('#graph path.edge').length,
        live: document.querySelector('#live')?.textContent?.trim() ?? null,
      };
    });
    const timeline = await timelineOf(page, origin);
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    return { fcpMs, ...seen, settled, ...view, timeline, ...net.tally(origin), errors };
  } finally {
    await context.close();
  }
}

// ─── the run ────────────────────────────────────────────────────────────────────────────────────────────

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
let agent;
let browser;
let floorServer;
let failed = false;
try {
  const repo = join(work, 'repo');
  let plan;
  let stackPorts;
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
  await new Promise((resolve, reject) => floorServer.once('error', reject).listen(floorPort, '127.0.0.1', resolve));
  const floorUrl = `http://127.0.0.1:${floorPort}/`;

  const stateDir = join(work, 'state');
  agent = startAgent({ repo, plan, stateDir, concurrency: 64, extraArgs: ['--listen', `127.0.0.1:${apiPort}`] });
  process.stderr.write(`starting the agent on ${EXAMPLE ? "the example's 4 components" : `${N_GENERATED} stand-ins`}… `);
  await agent.waitFor((e) => e.msg === 'all components running', 120_000, '"all components running"');
  const origin = `http://127.0.0.1:${apiPort}`;
  const token = readFileSync(join(stateDir, API_TOKEN_FILE), 'utf8').trim();
  const expected = await expectedView(origin, token);
  process.stderr.write(`${expected.rows.length} rows, ${expected.nodes} graph nodes; `);
  await sleep(1000);
  const rssBefore = await rssOver(agent.pid, 2000);
  process.stderr.write(`RSS ${fmt(MiB(rssBefore), 1)} MiB\n`);

  browser = await chromium.launch({ executablePath: opts.chromium, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
  const browserVersion = browser.version();
  // One unrecorded visit of the floor page: the browser's own first-context start-up (it never touches the agent).
  await visitFloor(browser, floorUrl);

  const runs = [];
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
    const overview = await visitOverview(browser, origin, session, expected, r === RUNS - 1 ? opts.screenshot : undefined);
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

  const med = (f) => median(runs.map(f));
  const last = runs[runs.length - 1];
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
  const range = (f) => `${fmt(Math.min(...runs.map(f)), 1)}–${fmt(Math.max(...runs.map(f)), 1)}`;
  const stack = EXAMPLE ? `the example stack (plans/edge-processes.toml: ${expected.rows.join(', ')})` : `${N_GENERATED} generated stand-ins (${expected.rows.length} rows)`;

  console.log(`\ndashboard benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}, Chromium ${browserVersion}; ${stack}; median of ${RUNS} runs, a fresh context (cold cache) each`);
  console.log('\ntransferred on a first visit (KB = 1,000 bytes on the wire: headers + compressed bodies, as Chromium counts them)');
  console.log(`  ${''.padEnd(30)} ${'page files (HTML/JS/CSS)'.padStart(26)} ${'API data (JSON, events)'.padStart(25)} ${'total'.padStart(10)}   vs 150 KB aim`);
  const bytesRow = (label, key) => {
    const x = s[key];
    const l = last[key];
    const aim = `${ratio(x.totalBytes, AIM_BYTES)} ${x.totalBytes < AIM_BYTES ? 'met' : 'NOT met'}`;
    console.log(
      `  ${label.padEnd(30)} ${`${fmt(KB(x.fileBytes), 1)} KB (${l.fileRequests} req)`.padStart(26)} ${`${fmt(KB(x.apiBytes), 1)} KB (${l.apiRequests} req)`.padStart(25)} ${`${fmt(KB(x.totalBytes), 1)} KB`.padStart(10)}   ${aim}`,
    );
  };
  bytesRow('login page (no session)', 'login');
  bytesRow('signed-in overview', 'overview');
  console.log(`  overview API data: JSON ${fmt(KB(s.overview.jsonBytes), 1)} KB, event stream ${fmt(KB(s.overview.streamBytes), 1)} KB so far (open)`);
  console.log('  overview requests (last run): ' + last.overview.requests.map((r) => `${r.method === 'GET' ? '' : `${r.method} `}${r.path} ${r.status ?? '—'}${r.encoding ? ` ${r.encoding}` : ''} ${fmt(r.bytes)} B`).join(', '));

  console.log('\ntime, ms since navigation start            median     min–max     vs the floor   aim');
  const timeRow = (label, x, f, aim) => console.log(`  ${label.padEnd(40)} ${fmt(x, 1).padStart(7)}   ${range(f).padStart(13)}   ${ratio(x, s.floorFcpMs).padStart(10)}     ${aim ?? ''}`);
  timeRow('floor: static page, first paint (ref.)', s.floorFcpMs, (x) => x.floor.fcpMs);
  timeRow('login page, first contentful paint', s.login.fcpMs, (x) => x.login.fcpMs, `< ${AIM_FCP_MS} ms ${s.login.fcpMs < AIM_FCP_MS ? 'met' : 'NOT met'}`);
  timeRow('overview, first contentful paint', s.overview.fcpMs, (x) => x.overview.fcpMs, `< ${AIM_FCP_MS} ms ${s.overview.fcpMs < AIM_FCP_MS ? 'met' : 'NOT met'}`);
  timeRow('overview, components table filled', s.overview.tableMs, (x) => x.overview.tableMs, `(${ratio(s.overview.tableMs, AIM_FCP_MS)} of ${AIM_FCP_MS} ms)`);
  timeRow('overview, dependency graph drawn', s.overview.graphMs, (x) => x.overview.graphMs);

  const timelineLine = (key, extra) => {
    const keys = Object.keys(last[key].timeline).filter((k) => runs.every((x) => Number.isFinite(x[key].timeline[k])));
    const points = [...keys.map((k) => [k.replace(/^\/assets\/([a-z]+)-[A-Z0-9]+(\.[a-z]+)$/, '$1$2'), med((x) => x[key].timeline[k])]), ...extra].sort((a, b) => a[1] - b[1]);
    return points.map(([k, v]) => `${k} ${fmt(v)}`).join(', ');
  };
  console.log(`  where the time goes (median ms at which each response ended):`);
  console.log(`    login:    ${timelineLine('login', [['FCP', s.login.fcpMs], ['form', s.login.formMs]])}`);
  console.log(`    overview: ${timelineLine('overview', [['FCP', s.overview.fcpMs], ['table', s.overview.tableMs], ['graph', s.overview.graphMs]])}`);

  console.log(`\nagent RSS: ${fmt(MiB(rssBefore), 1)} MiB before any page, ${fmt(MiB(rssAfter), 1)} MiB after ${RUNS} runs (${RUNS * 2} page loads, ${RUNS} sessions): ${rssAfter >= rssBefore ? '+' : ''}${fmt(MiB(rssAfter - rssBefore), 1)} MiB, ${ratio(rssAfter, rssBefore)}`);

  const odd = [];
  const notRunning = Object.entries(last.overview.states).filter(([, st]) => st !== 'running');
  if (notRunning.length) odd.push(`rows not running in the last run: ${notRunning.map(([n, st]) => `${n} ${st}`).join(', ')}`);
  if (last.overview.live !== 'live') odd.push(`#live reads ${JSON.stringify(last.overview.live)} in the last run`);
  for (const [k, x] of Object.entries({ login: runs.map((r) => r.login), overview: runs.map((r) => r.overview) })) {
    if (x.some((v) => !v.settled)) odd.push(`${k}: requests still pending after 10 s in ${x.filter((v) => !v.settled).length} run(s)`);
    // Without a session, the page's GET /v1/session is answered 401 (docs/dashboard.md), which Chromium logs as an error.
    const expected401 = (text) => k === 'login' && /status of 401/.test(text);
    const errs = [...new Set(x.flatMap((v) => v.errors.filter((e) => !expected401(e))))];
    if (errs.length) odd.push(`${k}: ${errs.length} distinct console/page error(s): ${errs.join(' | ')}`);
    const isExpected = (r) => k === 'login' && r.method === 'GET' && r.path === '/v1/session' && r.status === 401;
    const bad = [...new Set(x.flatMap((v) => v.requests.filter((r) => (r.failed || (r.status ?? 0) >= 400) && !isExpected(r)).map((r) => `${r.method} ${r.path} ${r.status ?? ''}${r.failed ? ` ${r.failed}` : ''}`)))];
    if (bad.length) odd.push(`${k}: requests answered with an error: ${bad.join(', ')}`);
    // The same URL fetched more than once before the page settled (every run counts, the last run is shown).
    const counts = new Map();
    for (const r of x[x.length - 1].requests) counts.set(`${r.method} ${r.path}`, (counts.get(`${r.method} ${r.path}`) ?? 0) + 1);
    const repeated = [...counts].filter(([, c]) => c > 1);
    if (repeated.length) {
      const extra = x[x.length - 1].requests.filter((r, i, all) => all.findIndex((o) => o.method === r.method && o.path === r.path) !== i);
      odd.push(`${k}: fetched more than once on one visit (last run): ${repeated.map(([u, c]) => `${u} ×${c}`).join(', ')} (${fmt(KB(extra.reduce((n, r) => n + r.bytes, 0)), 1)} KB of the total)`);
    }
  }
  for (const o of odd) console.log(`note: ${o}`);
  const note = busyNote(othersPercent, loadBefore, loadAfter);
  if (note) console.log(note);
  if (opts.screenshot) console.log(`screenshot of the last overview: ${opts.screenshot}`);
  // A page whose own files did not all load does not work, whatever it managed to draw.
  const brokenFiles = [...new Set(runs.flatMap((x) => [...x.login.requests, ...x.overview.requests]).filter((r) => !r.path.startsWith('/v1/') && (r.failed || !(r.status < 400))).map((r) => `${r.path} ${r.status ?? r.failed}`))];
  if (brokenFiles.length) {
    failed = true;
    console.error(`dashboard bench failed: the page's own files did not all load: ${brokenFiles.join(', ')}${brokenFiles.some((b) => / 40[14]$/.test(b)) ? ' (was dist/web rebuilt after the agent started? it reads manifest.json at its start)' : ''}`);
  }

  ensureDir(join(benchDir, 'results'));
  const r1 = (x) => round(x, 1);
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
          bytes: 'DevTools Network.loadingFinished encodedDataLength per request (headers + compressed body); the open event stream: its headers + the chunks received so far',
          fileBytes: 'GET / and /assets/* (HTML, JS, CSS)',
          apiBytes: '/v1/* (JSON and the event stream)',
          fcpMs: "performance.getEntriesByName('first-contentful-paint')[0].startTime",
          tableMs: "performance.now() at the first animation frame where every component has its '#components tr[data-component]' row",
          graphMs: "performance.now() at the first animation frame where '#graph g.node' has every node",
          floorFcpMs: 'the first contentful paint of a minimal static HTML page from a plain node:http server on loopback, same browser, a fresh context',
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
          login: { fcpMs: r1(x.login.fcpMs), formMs: r1(x.login.formMs), totalBytes: x.login.totalBytes, fileBytes: x.login.fileBytes, apiBytes: x.login.apiBytes, responseEndMs: x.login.timeline },
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
  console.log(`\nresults: ${relative(process.cwd(), resultsFile)} (bench took ${fmt((performance.now() - t0) / 1000)} s)`);
} catch (err) {
  failed = true;
  console.error(`dashboard bench failed: ${err.stack ?? err.message}`);
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
