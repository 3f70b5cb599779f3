// The world the dashboard's browser tests run in: the real agent on the example's process-only stack
// (plans/edge-processes.toml: influxdb, api, telemetry, web, run by the stand-ins in artifacts/), moved to free ports
// so that it runs beside other test files, with its HTTP API (and so the dashboard) on a free loopback port; a second
// HTTP server on loopback that plays a foreign site; and the DOM shapes the tests' page functions use.
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';
import { callAgentApi } from '../support/agent-api.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { freePorts } from '../support/stack-fixture.js';

export const COMPONENTS = ['influxdb', 'api', 'telemetry', 'web'] as const;

/** The example's fixed ports (recipes/*.toml: the stack's three, the gateway composite's two), each moved to a free one. */
const EXAMPLE_PORTS = ['18086', '18087', '18088', '18090', '18091'] as const;

export interface ComponentJson {
  name: string;
  state: string;
  pid: number | null;
  restarts: number;
}

export interface DashboardStack {
  dir: string;
  h: AgentHarness;
  agent: AgentProcess;
  /** The dashboard's (and the API's) origin, e.g. http://127.0.0.1:41234 */
  origin: string;
  port: number;
  token: string;
  /** GET with the bearer token, as keystonectl would: the tests' view of the truth, beside the page's. */
  get(path: string): Promise<{ status: number; body: unknown }>;
  post(path: string): Promise<{ status: number; body: unknown }>;
  components(): Promise<ComponentJson[]>;
  /** Resolves once every component of the example is `running` with a pid; rejects at the deadline. */
  waitAllRunning(deadlineMs?: number): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/**
 * Starts the agent on a copy of the example (recipes/, plans/, artifacts/) in a temp directory, ports moved, and waits
 * until the stack runs. `--max-backoff 3s` instead of the harness's 800 ms: after a few crashes in a row the agent waits
 * over a second before the next restart (100 ms, then doubling: SPEC §5), long enough for the page to show `backoff`.
 */
export async function startDashboardStack(opts: { plan?: string } = {}): Promise<DashboardStack> {
  if (!existsSync(join(PROJECT_ROOT, 'dist', 'web', 'index.html')))
    throw new Error('dist/web/index.html is missing: run `npm run build` first (it bundles web/ into dist/web/)');
  const dir = mkdtempSync(join(tmpdir(), 'keystone-dashboard-'));
  // The components run as nobody when the tests run as root: they must reach the copy.
  chmodSync(dir, 0o755);
  for (const d of ['recipes', 'plans', 'artifacts']) cpSync(join(PROJECT_ROOT, d), join(dir, d), { recursive: true });
  const ports = await freePorts(EXAMPLE_PORTS.length + 1);
  const port = ports.pop()!;
  for (const f of readdirSync(join(dir, 'recipes'))) {
    const path = join(dir, 'recipes', f);
    let text = readFileSync(path, 'utf8');
    EXAMPLE_PORTS.forEach((fixed, i) => (text = text.replaceAll(fixed, String(ports[i]))));
    writeFileSync(path, text);
  }
  const h = new AgentHarness();
  const agent = h.start({
    dir,
    plan: opts.plan ?? 'plans/edge-processes.toml',
    trustArgs: ['--allow-unsigned'],
    args: ['--listen', `127.0.0.1:${port}`, '--max-backoff', '3s'],
  });
  const stop = async () => {
    await h.cleanup();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await agent.waitForLog(is.msg('HTTP API listening'), 30_000, 0, 'the HTTP API');
    await agent.waitForLog(is.msg('all components running'), 60_000, 0, 'the example stack');
  } catch (err) {
    await stop();
    throw err;
  }
  // The agent writes the token at its start, before it listens.
  const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
  const get = (path: string) => callAgentApi(port, token, 'GET', path, 60_000);
  const post = (path: string) => callAgentApi(port, token, 'POST', path, 130_000);
  const components = async () => {
    const r = await get('/v1/components');
    if (r.status !== 200) throw new Error(`GET /v1/components answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body as ComponentJson[];
  };
  const waitAllRunning = async (deadlineMs = 60_000) => {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const list = await components();
      const running = list.filter((c) => c.state === 'running' && c.pid !== null);
      if (COMPONENTS.every((n) => running.some((c) => c.name === n)))
        return Object.fromEntries(running.map((c) => [c.name, c.pid!]));
      if (Date.now() > deadline)
        throw new Error(
          `the stack is not all running after ${deadlineMs} ms: ${JSON.stringify(list.map((c) => [c.name, c.state]))}\n${agent.tail()}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return {
    dir,
    h,
    agent,
    origin: `http://127.0.0.1:${port}`,
    port,
    token,
    get,
    post,
    components,
    waitAllRunning,
    stop,
  };
}

/**
 * A site of another origin: one blank HTML page on a loopback port, reached by the browser as http://evil.test:PORT
 * (chromium's --host-resolver-rules maps the name to 127.0.0.1), so its requests carry `Origin: http://evil.test:PORT`
 * and `Sec-Fetch-Site: cross-site`, as a page on the internet would after DNS rebinding or plain CSRF.
 */
export async function startForeignSite(): Promise<{ url: string; origin: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html lang="en"><title>another site</title><p>nothing to see</p></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://evil.test:${port}`;
  return { url: `${origin}/`, origin, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The chromium flag that sends evil.test to loopback. */
export const FOREIGN_SITE_RULE = '--host-resolver-rules=MAP evil.test 127.0.0.1';

/** What a page's network did, seen through the DevTools protocol (the page cannot hide a request from it). */
export interface NetworkRecord {
  url: string;
  method: string;
  type: string | undefined;
  /** The HTTP status the browser received, even for responses CORS keeps from the page (and for preflights). */
  status?: number;
  /** Bytes on the wire (headers and compressed body), once loading finished. */
  encodedBytes?: number;
  contentEncoding?: string;
  failed?: string;
  finished: boolean;
}

/** Records every request of `page` by request id, from before its first navigation on. */
export async function recordNetwork(
  context: BrowserContext,
  page: Page,
): Promise<{ cdp: CDPSession; requests: Map<string, NetworkRecord> }> {
  const cdp = await context.newCDPSession(page);
  const requests = new Map<string, NetworkRecord>();
  const rec = (id: string) => {
    let r = requests.get(id);
    if (!r) requests.set(id, (r = { url: '', method: '', type: undefined, finished: false }));
    return r;
  };
  cdp.on('Network.requestWillBeSent', (e) =>
    Object.assign(rec(e.requestId), { url: e.request.url, method: e.request.method, type: e.type }),
  );
  cdp.on('Network.responseReceivedExtraInfo', (e) => (rec(e.requestId).status = e.statusCode));
  cdp.on('Network.responseReceived', (e) => {
    const r = rec(e.requestId);
    r.status ??= e.response.status;
    const headers = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    r.contentEncoding = headers['content-encoding'];
  });
  cdp.on('Network.loadingFinished', (e) =>
    Object.assign(rec(e.requestId), { encodedBytes: e.encodedDataLength, finished: true }),
  );
  cdp.on('Network.loadingFailed', (e) => Object.assign(rec(e.requestId), { failed: e.errorText, finished: true }));
  await cdp.send('Network.enable');
  return { cdp, requests };
}

// The page's side. This project's tsconfig has no DOM library (it is Node code): the page functions the tests pass to
// page.evaluate name the few DOM members they use through these shapes. They run in the browser, never in Node.

export interface PageElement {
  readonly tagName: string;
  readonly textContent: string | null;
  readonly className: unknown;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
  matches(selector: string): boolean;
}

export interface PageDocument extends PageElement {
  readonly documentElement: PageElement & {
    readonly scrollWidth: number;
    readonly clientWidth: number;
    readonly lang: string;
  };
  readonly body: PageElement;
  readonly activeElement: PageElement | null;
  readonly cookie: string;
}

export interface PageStorage {
  readonly length: number;
  key(i: number): string | null;
  getItem(key: string): string | null;
}

export interface PageMutationObserver {
  observe(
    target: PageElement,
    options: {
      attributes?: boolean;
      attributeFilter?: string[];
      childList?: boolean;
      subtree?: boolean;
      characterData?: boolean;
    },
  ): void;
  disconnect(): void;
}

export interface PageWindow {
  readonly innerWidth: number;
  readonly localStorage: PageStorage;
  readonly sessionStorage: PageStorage;
  getComputedStyle(el: PageElement): {
    readonly stroke: string;
    readonly strokeDasharray: string;
    readonly outlineStyle: string;
    readonly boxShadow: string;
    readonly backgroundColor: string;
  };
  readonly MutationObserver: new (callback: () => void) => PageMutationObserver;
  /** What a test leaves on the page to see later that it was not reloaded. */
  ksMarker?: string;
  /** Row states a test's observer saw, in order, per component. */
  ksSeen?: Record<string, string[]>;
  ksObserver?: PageMutationObserver;
}
