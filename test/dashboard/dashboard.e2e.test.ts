// Issue 19: the device dashboard in a real browser (Debian's chromium, driven by playwright-core) against the real agent
// running the example's process-only stack. What a technician does with it (sign in with the token, watch a crashed
// component come back, restart the database with its dependents, read the graph and a live log tail, use it from the
// keyboard and on a phone) and what it must refuse (a wrong token, a session without its CSRF header, a page of another
// origin, a signed-out session), against the DOM, routes and cookies docs/dashboard.md describes. One agent for
// the file (beforeAll); each test its own browser context, so cookies and pages never carry over between tests.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { needs } from '../support/requirements.js';
import {
  COMPONENTS,
  FOREIGN_SITE_RULE,
  recordNetwork,
  startDashboardStack,
  startForeignSite,
  type DashboardStack,
  type NetworkRecord,
  type PageDocument,
  type PageElement,
  type PageWindow,
} from './dashboard-world.js';

// The browser's globals, for the functions that run in the page (page.evaluate, waitForFunction): see PageWindow.
declare const window: PageWindow;
declare const document: PageDocument;

const browserNeeded = needs('chromium');

/** Long-running event streams: they never finish loading, so they are left out of "everything has loaded". */
const isStream = (url: string) => /\/v1\/events(\?|$)/.test(url) || /[?&]follow=true/.test(url);

describe.skipIf(browserNeeded.skip)(browserNeeded.title('the dashboard in a browser, against the example stack'), { timeout: 120_000 }, () => {
  let stack: DashboardStack;
  let browser: Browser;
  let foreign: Awaited<ReturnType<typeof startForeignSite>>;
  const contexts: BrowserContext[] = [];
  const scratch: string[] = [];

  beforeAll(async () => {
    stack = await startDashboardStack();
    foreign = await startForeignSite();
    browser = await launchChromium({ args: [FOREIGN_SITE_RULE] });
  }, 120_000);

  /** What went wrong in a page during the test: uncaught exceptions, and anything the CSP refused. */
  const pageProblems: string[] = [];

  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close();
    // Every test: the page threw nothing and broke none of its own CSP (an inline script or style would show here).
    expect(pageProblems.splice(0)).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await foreign?.close();
    await stack?.stop();
    for (const d of scratch) rmSync(d, { recursive: true, force: true });
  }, 60_000);

  /** A fresh context (closed after the test) and its page. */
  async function open(options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ colorScheme: 'light', ...options });
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (err) => pageProblems.push(`uncaught in the page: ${err.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) pageProblems.push(`CSP: ${m.text()}`);
    });
    return { context, page };
  }

  /** Loads `/` and signs in through the login form, as a person does; resolves once the components table is there. */
  async function signIn(page: Page): Promise<void> {
    await page.goto(`${stack.origin}/`);
    const form = page.locator('form#login');
    await form.waitFor({ timeout: 15_000 });
    await form.locator('input[name="token"]').fill(stack.token);
    await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
    await page.locator('table#components').waitFor({ timeout: 15_000 });
  }

  async function signedIn(options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
    const o = await open(options);
    await signIn(o.page);
    return o;
  }

  /** Waits until the table shows every component of the example `running` (its data-state and its state cell's word). */
  async function waitRowsRunning(page: Page, timeout = 30_000): Promise<void> {
    await page.waitForFunction(
      (names) =>
        names.every((n) => {
          const row = document.querySelector(`#components tr[data-component="${n}"]`);
          return row?.getAttribute('data-state') === 'running' && row.querySelector('[data-col="state"]')?.textContent?.includes('running') === true;
        }),
      [...COMPONENTS],
      { timeout },
    );
  }

  /**
   * Puts a marker on the page's window (a reload would lose it) and an observer that records every state each row of
   * the table shows, in order, and every text of #action-status: what the page showed between two looks of the test.
   */
  async function watchPage(page: Page, marker: string): Promise<void> {
    await page.evaluate((m) => {
      window.ksMarker = m;
      const seen: Record<string, string[]> = { '#action-status': [] };
      const add = (key: string, value: string) => {
        const list = (seen[key] ??= []);
        if (list[list.length - 1] !== value) list.push(value);
      };
      const look = () => {
        for (const row of document.querySelectorAll('#components tr[data-component]')) add(row.getAttribute('data-component') ?? '?', row.getAttribute('data-state') ?? '');
        const status = document.querySelector('#action-status');
        if (status?.textContent) add('#action-status', status.textContent);
      };
      look();
      const observer = new window.MutationObserver(look);
      observer.observe(document.body, { attributes: true, childList: true, subtree: true, characterData: true });
      window.ksSeen = seen;
      window.ksObserver = observer;
    }, marker);
  }

  const seenOnPage = (page: Page) => page.evaluate(() => window.ksSeen ?? {});
  const markerOf = (page: Page) => page.evaluate(() => window.ksMarker);

  /** The CSRF token the page echoes (the readable cookie), as this context holds it. */
  async function csrfOf(context: BrowserContext): Promise<string> {
    const c = (await context.cookies(stack.origin)).find((k) => k.name === 'keystone_csrf');
    expect(c?.value, 'the keystone_csrf cookie').toBeTruthy();
    return c!.value;
  }

  /** fetch() from inside the page (its origin, its cookies): the status and the JSON body (or null). */
  function fetchFromPage(page: Page, path: string, init: { method?: string; csrf?: string } = {}): Promise<{ status: number; body: unknown; type: string }> {
    return page.evaluate(
      async ({ path, method, csrf }) => {
        const res = await fetch(path, { method: method ?? 'GET', credentials: 'same-origin', headers: csrf === undefined ? {} : { 'X-Keystone-CSRF': csrf } });
        const text = await res.text();
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = text.slice(0, 200);
        }
        return { status: res.status, body, type: res.headers.get('content-type') ?? '' };
      },
      { path, method: init.method, csrf: init.csrf },
    );
  }

  // First in the file on purpose: the agent logs the first refusal from a source address in full and only counts the
  // next ones for a minute (src/api/refusal-log.ts), and every page here connects from 127.0.0.1. Run first, the foreign
  // page's refusal is the one logged with its code; the session is set through a request, not a page, so that no page
  // load (whose session check is refused while signed out) comes before it.
  it('a page of another origin reads nothing of the API, session or not, and the agent refuses it (403 KS_FOREIGN_ORIGIN)', async () => {
    const pids = await stack.waitAllRunning();
    const mark = stack.agent.mark();
    const { context, page } = await open();
    // This browser is signed in to the dashboard: the worst case, its session cookie is in the jar.
    const signin = await context.request.post(`${stack.origin}/v1/session`, { data: { token: stack.token } });
    expect(signin.status(), await signin.text()).toBe(200);
    const csrf = await csrfOf(context);
    const net = await recordNetwork(context, page);
    await page.goto(foreign.url);
    expect(await page.evaluate(() => document.documentElement.textContent)).toContain('nothing to see');

    const results = await page.evaluate(
      async ({ api, csrf }) => {
        const attempt = async (what: string, run: () => Promise<{ type: string; status: number; text: () => Promise<string> }>) => {
          try {
            const res = await run();
            return { what, type: res.type, status: res.status, body: await res.text() };
          } catch (err) {
            return { what, error: String(err) };
          }
        };
        return [
          // A plain read, cookies included: CORS keeps any answer from this page.
          await attempt('GET', () => fetch(`${api}/v1/components`, { credentials: 'include' })),
          // With the CSRF header (even knowing its value): a preflight, which the API never grants.
          await attempt('GET+csrf', () => fetch(`${api}/v1/components`, { credentials: 'include', headers: { 'X-Keystone-CSRF': csrf } })),
          // A blind write (no-cors needs no preflight): the page gets an opaque answer, the agent must do nothing.
          await attempt('POST', () => fetch(`${api}/v1/components/influxdb:restart`, { method: 'POST', mode: 'no-cors', credentials: 'include' })),
        ];
      },
      { api: stack.origin, csrf },
    );
    expect(results).toEqual([
      { what: 'GET', error: expect.stringContaining('TypeError') },
      { what: 'GET+csrf', error: expect.stringContaining('TypeError') },
      { what: 'POST', type: 'opaque', status: 0, body: '' },
    ]);

    // What the agent answered, as the browser's network saw it (the page could not): 403 to every request that reached
    // it, the preflight of the request with the header included; that request itself was never sent.
    const toAgent = () => [...net.requests.values()].filter((r) => r.url.startsWith(`${stack.origin}/`));
    const answered = () => toAgent().filter((r) => r.status !== undefined);
    await expect.poll(() => answered().map((r) => r.method).sort(), { timeout: 10_000 }).toEqual(['GET', 'OPTIONS', 'POST']);
    expect(answered().map((r) => `${r.method} ${r.status}`).sort()).toEqual(['GET 403', 'OPTIONS 403', 'POST 403']);
    expect(answered().find((r) => r.method === 'POST')?.url).toBe(`${stack.origin}/v1/components/influxdb:restart`);
    await expect.poll(() => toAgent().filter((r) => r.status === undefined).map((r) => r.failed ?? 'pending'), { timeout: 10_000 }).toEqual(['net::ERR_FAILED']);

    // …and its log says why, with the foreign origin.
    const refusal = await stack.agent.waitForLog(
      (l) => l.msg === 'API request refused' && l.code === 'KS_FOREIGN_ORIGIN',
      10_000,
      mark,
      'the refusal of the foreign page (the first refusal from 127.0.0.1 since the agent started: is this test still first in the file?)',
    );
    expect(refusal).toMatchObject({ origin: foreign.origin });
    // The blind POST restarted nothing.
    expect(await stack.waitAllRunning()).toEqual(pids);
  });

  it('signs in with the token: the login form alone before; the four components running after; the token kept nowhere a script reads; the session cookie HttpOnly, SameSite=Strict', async () => {
    await stack.waitAllRunning();
    const { context, page } = await open();
    await page.goto(`${stack.origin}/`);
    const form = page.locator('form#login');
    await form.waitFor({ timeout: 15_000 });

    // Before: the form (a password field, labelled) and its help, and nothing of the device.
    const input = form.locator('input[name="token"]');
    expect(await input.getAttribute('type')).toBe('password');
    expect(await input.getAttribute('autocomplete')).toBe('off');
    expect(await input.getAttribute('aria-label')).toBe('API token');
    expect(await page.locator('body').textContent()).toContain('api-token');
    for (const sel of ['#components', '#graph', '#revision', '#history', '#component']) expect(await page.locator(sel).count(), sel).toBe(0);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    const bodyText = (await page.locator('body').textContent()) ?? '';
    for (const name of ['influxdb', 'telemetry']) expect(bodyText, 'nothing of the device before signing in').not.toContain(name);

    await input.fill(stack.token);
    await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
    await page.locator('table#components').waitFor({ timeout: 15_000 });
    await waitRowsRunning(page);
    const rows = await page.locator('#components tr[data-component]').evaluateAll((trs: PageElement[]) => trs.map((tr) => tr.getAttribute('data-component')));
    expect([...rows].sort()).toEqual([...COMPONENTS].sort());
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    // The token: not in web storage, not in a readable cookie, not in the URL, not left in the form.
    const kept = await page.evaluate(() => {
      const dump = (s: PageWindow['localStorage']) => Array.from({ length: s.length }, (_, i) => `${s.key(i)}=${s.getItem(s.key(i) ?? '')}`).join('\n');
      const field = document.querySelector('input[name="token"]') as (PageElement & { value?: string }) | null;
      return { local: dump(window.localStorage), session: dump(window.sessionStorage), cookie: document.cookie, field: field?.value ?? '' };
    });
    expect(kept.local).not.toContain(stack.token);
    expect(kept.session).not.toContain(stack.token);
    expect(kept.cookie).not.toContain(stack.token);
    expect(kept.field).toBe('');
    expect(page.url()).not.toContain(stack.token);
    // The session cookie is HttpOnly: the page's scripts cannot even see it.
    expect(kept.cookie).not.toContain('keystone_session');

    const cookies = await context.cookies(stack.origin);
    const session = cookies.find((c) => c.name === 'keystone_session');
    const csrf = cookies.find((c) => c.name === 'keystone_csrf');
    const now = Date.now() / 1000;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(session!.value).not.toContain(stack.token);
    // An expiry (Max-Age=28800, a shift), not a cookie that lives as long as the browser does.
    expect(session!.expires).toBeGreaterThan(now + 7 * 3600);
    expect(session!.expires).toBeLessThan(now + 8 * 3600 + 120);
    expect(csrf).toMatchObject({ httpOnly: false, sameSite: 'Strict', path: '/' });
    expect(csrf!.expires).toBeGreaterThan(now + 7 * 3600);
  });

  it("a wrong token: the alert with the API's message, and no session", async () => {
    const { context, page } = await open();
    // What the API says to a wrong token, asked directly: the page must show that message.
    const direct = await fetch(`${stack.origin}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'not-the-token' }) });
    const refusal = (await direct.json()) as { error: { code: string; message: string } };
    expect({ status: direct.status, code: refusal.error.code }).toEqual({ status: 401, code: 'KS_TOKEN_INVALID' });

    await page.goto(`${stack.origin}/`);
    const form = page.locator('form#login');
    await form.waitFor({ timeout: 15_000 });
    await form.locator('input[name="token"]').fill('not-the-token');
    await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
    const alert = page.locator('[role="alert"]');
    await alert.filter({ hasText: refusal.error.message }).waitFor({ timeout: 10_000 });
    expect(await form.isVisible()).toBe(true);
    expect(await page.locator('#components').count()).toBe(0);
    const names = (await context.cookies(stack.origin)).filter((c) => c.value !== '').map((c) => c.name);
    expect(names).not.toContain('keystone_session');
    expect(names).not.toContain('keystone_csrf');
  });

  it('with the session cookie but without the X-Keystone-CSRF header, the API answers 401, to reads and to dry runs alike', async () => {
    const { context, page } = await signedIn();
    const csrf = await csrfOf(context);
    const read = await fetchFromPage(page, '/v1/components');
    const dry = await fetchFromPage(page, '/v1/components/influxdb:restart?dry=true', { method: 'POST' });
    const wrong = await fetchFromPage(page, '/v1/components', { csrf: `${csrf}x` });
    for (const r of [read, dry, wrong]) {
      expect(r.status, JSON.stringify(r.body)).toBe(401);
      expect(r.body).toMatchObject({ error: { code: expect.stringMatching(/^KS_/), message: expect.any(String) } });
    }
    // The control: the same requests with the header pass, so the 401s above are the header's doing.
    expect((await fetchFromPage(page, '/v1/components', { csrf })).status).toBe(200);
    const planned = await fetchFromPage(page, '/v1/components/influxdb:restart?dry=true', { method: 'POST', csrf });
    expect(planned).toMatchObject({ status: 200, body: { stopOrder: ['web', 'api', 'influxdb'], startOrder: ['influxdb', 'api', 'web'] } });
  });

  it('with a session `/` and the API answer; after "Sign out" the API answers 401 to that session and the login form is back', async () => {
    const { context, page } = await signedIn();
    const csrf = await csrfOf(context);
    const home = await fetchFromPage(page, '/');
    expect(home.status).toBe(200);
    expect(home.type).toContain('text/html');
    expect(await fetchFromPage(page, '/v1/session', { csrf })).toMatchObject({ status: 200, body: { expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) } });
    expect((await fetchFromPage(page, '/v1/components', { csrf })).status).toBe(200);
    const before = await context.cookies(stack.origin);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('form#login').waitFor({ timeout: 10_000 });
    expect(await page.locator('#components').count()).toBe(0);
    expect((await context.cookies(stack.origin)).filter((c) => c.name === 'keystone_session' && c.value !== '')).toEqual([]);
    expect((await fetchFromPage(page, '/v1/components', { csrf })).status).toBe(401);

    // The agent ended the session itself, not only the browser's cookie: the old cookie, put back, is refused.
    await context.addCookies(before.map((c) => ({ ...c })));
    const replay = await fetchFromPage(page, '/v1/components', { csrf });
    expect(replay.status, JSON.stringify(replay.body)).toBe(401);
  });

  it('a component that keeps crashing: its row shows backoff and then running again with a new pid, live, without a reload', async () => {
    // The agent restarts a crashed component after ~100 ms the first time, then doubles the wait (SPEC §5; the crash
    // loop budget counts restarts until a healthy spell of 10 min): too short a `backoff` for a page that refetches on
    // events (at most ~4 times a second) to be sure to show it. Four crashes first: the fifth waits 1.3-1.9 s.
    let pids = await stack.waitAllRunning();
    for (let i = 0; i < 4; i++) {
      const old = pids.telemetry!;
      process.kill(old, 'SIGKILL');
      const deadline = Date.now() + 30_000;
      while ((pids = await stack.waitAllRunning()).telemetry === old) {
        if (Date.now() > deadline) throw new Error(`telemetry (pid ${old}) was not restarted after SIGKILL`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const { page } = await signedIn();
    await waitRowsRunning(page);
    let loads = 0;
    page.on('load', () => loads++);
    const row = page.locator('#components tr[data-component="telemetry"]');
    const instance = (await row.locator('[data-col="instance"]').textContent()) ?? '';
    // The table shows the pid the agent knows (not a stale one): the process the test kills is the one the page shows.
    expect(instance).toContain(`pid ${pids.telemetry}`);
    const restartsBefore = Number((await row.locator('[data-col="restarts"]').textContent())?.trim());
    expect(restartsBefore).toBeGreaterThanOrEqual(4);
    await watchPage(page, 'before the kill');

    process.kill(pids.telemetry!, 'SIGKILL');
    // Back to running with another pid, on the same page.
    await page.waitForFunction(
      (old) => {
        const r = document.querySelector('#components tr[data-component="telemetry"]');
        const pid = /pid (\d+)/.exec(r?.querySelector('[data-col="instance"]')?.textContent ?? '')?.[1];
        return r?.getAttribute('data-state') === 'running' && pid !== undefined && Number(pid) !== old;
      },
      pids.telemetry!,
      { timeout: 30_000 },
    );
    const seen = await seenOnPage(page);
    // The row went from running through backoff and ended running.
    expect(seen.telemetry, 'states the telemetry row showed').toContain('backoff');
    expect(seen.telemetry![0]).toBe('running');
    expect(seen.telemetry!.at(-1)).toBe('running');
    // The others were never touched (telemetry has no dependents).
    for (const n of ['influxdb', 'api', 'web']) expect(seen[n], n).toEqual(['running']);
    expect(Number((await row.locator('[data-col="restarts"]').textContent())?.trim()), 'the restarts cell').toBe(restartsBefore + 1);
    // Without a reload: the marker is still on the window and no load event came.
    expect(await markerOf(page)).toBe('before the kill');
    expect(loads).toBe(0);
    const now = await stack.waitAllRunning();
    expect(await row.locator('[data-col="instance"]').textContent()).toContain(`pid ${now.telemetry}`);
  });

  it('restarts influxdb from the page: the dialog shows the dry run (dependents, untouched), then healthy, with new pids for it and its dependents', async () => {
    const pids = await stack.waitAllRunning();
    const { page } = await signedIn();
    await waitRowsRunning(page);
    await watchPage(page, 'before the restart');
    await page.locator('#components tr[data-component="influxdb"] [data-col="actions"] button', { hasText: /^Restart$/ }).click();

    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    await dialog.locator('ul[data-list="stopOrder"] li').first().waitFor({ timeout: 10_000 });
    const list = async (name: string) => (await dialog.locator(`ul[data-list="${name}"] li`).allTextContents()).map((t) => t.trim());
    expect(await list('stopOrder')).toEqual(['web', 'api', 'influxdb']);
    expect(await list('startOrder')).toEqual(['influxdb', 'api', 'web']);
    expect(await list('untouched')).toEqual(['telemetry']);
    expect(await dialog.getByRole('button', { name: 'Cancel' }).count()).toBe(1);
    const confirm = dialog.locator('button[data-confirm]');
    expect((await confirm.textContent())?.trim()).toBe('Restart influxdb');
    await confirm.click();

    const status = page.locator('#action-status');
    expect(await status.getAttribute('role')).toBe('status');
    await expect.poll(async () => (await status.textContent()) ?? '', { timeout: 90_000 }).toContain('healthy');
    expect(await status.getAttribute('class') ?? '').not.toContain('error');
    const seen = await seenOnPage(page);
    expect(seen['#action-status']!.some((t) => t.includes('restarting influxdb')), `#action-status showed ${JSON.stringify(seen['#action-status'])}`).toBe(true);
    // The table followed the restart while the page waited: influxdb and its hard dependents left running and came
    // back; telemetry (ordering on influxdb) was left alone, as the dialog said.
    for (const n of ['influxdb', 'api', 'web']) {
      expect(seen[n]!.some((s) => s !== 'running'), `${n} row states ${JSON.stringify(seen[n])}`).toBe(true);
    }
    expect(seen.telemetry).toEqual(['running']);

    const after = await stack.waitAllRunning();
    expect(after.influxdb).not.toBe(pids.influxdb);
    expect(after.api).not.toBe(pids.api);
    expect(after.web).not.toBe(pids.web);
    expect(after.telemetry).toBe(pids.telemetry);
    await page.waitForFunction(
      (pid) => document.querySelector('#components tr[data-component="influxdb"] [data-col="instance"]')?.textContent?.includes(`pid ${pid}`) === true,
      after.influxdb!,
      { timeout: 10_000 },
    );
    await waitRowsRunning(page);
  });

  it('the dependency graph: a node per component in start order, an edge per dependency; ordering edges dashed and another colour than hard ones', async () => {
    await stack.waitAllRunning();
    const { page } = await signedIn();
    const graph = page.locator('svg#graph');
    await graph.waitFor({ timeout: 10_000 });
    expect(await graph.getAttribute('role')).toBe('img');
    expect(await graph.getAttribute('aria-label')).toBe('dependency graph');
    await page.waitForFunction(() => document.querySelectorAll('#graph g.node').length >= 4, undefined, { timeout: 10_000 });
    const nodes = await graph.locator('g.node').evaluateAll((gs: PageElement[]) => gs.map((g) => [g.getAttribute('data-component'), g.getAttribute('data-state'), g.textContent]));
    expect(nodes.map(([n]) => n).sort()).toEqual([...COMPONENTS].sort());
    for (const [name, state, text] of nodes) {
      expect(state, `${name}'s node`).toBe('running');
      expect(text, "a node shows the name and the state as a word").toContain(name);
      expect(text).toContain('running');
    }

    // One path per edge of /v1/graph, of its kind.
    const g = (await stack.get('/v1/graph')).body as { edges: Array<{ from: string; to: string; type: string }> };
    expect(g.edges).toHaveLength(3);
    const paths = await graph.locator('path.edge').evaluateAll((ps: PageElement[]) => ps.map((p) => `${p.getAttribute('data-from')}->${p.getAttribute('data-to')}:${p.getAttribute('data-kind')}`));
    expect(paths.sort()).toEqual(g.edges.map((e) => `${e.from}->${e.to}:${e.type}`).sort());
    expect(paths).toContain('telemetry->influxdb:ordering');
    expect(paths).toContain('api->influxdb:hard');

    const style = (from: string, to: string) =>
      graph.locator(`path.edge[data-from="${from}"][data-to="${to}"]`).evaluate((p: PageElement) => {
        const s = window.getComputedStyle(p);
        return { dash: s.strokeDasharray, stroke: s.stroke };
      });
    const ordering = await style('telemetry', 'influxdb');
    const hard = await style('api', 'influxdb');
    expect(ordering.dash, 'the ordering edge is dashed').not.toBe('none');
    expect(hard.dash, 'the hard edge is solid').toBe('none');
    expect(ordering.stroke, 'the two kinds have different colours').not.toBe(hard.stroke);

    // Layer 0 (influxdb) first, then api and telemetry, then web: along x (left to right) or y (top to bottom).
    const box = async (n: string) => (await graph.locator(`g.node[data-component="${n}"]`).boundingBox())!;
    const [influx, api, telemetry, web] = await Promise.all(['influxdb', 'api', 'telemetry', 'web'].map(box));
    const along = (axis: 'x' | 'y') => influx![axis] < api![axis] && influx![axis] < telemetry![axis] && api![axis] < web![axis] && telemetry![axis] < web![axis];
    expect(along('x') || along('y'), `node boxes ${JSON.stringify({ influx, api, telemetry, web })}`).toBe(true);
  });

  it("the component page's log tail follows new lines live (no reload)", async () => {
    await stack.waitAllRunning();
    const { page } = await signedIn();
    await page.locator('#components tr[data-component="telemetry"] [data-col="name"] a').click();
    await page.waitForURL(/#\/components\/telemetry$/);
    const section = page.locator('section#component');
    await section.waitFor({ timeout: 10_000 });
    const log = section.locator('pre#log');
    expect(await log.getAttribute('aria-live')).toBe('polite');
    // The stand-in logs its start ("fake-telemetry probing … every 1000ms") and then only changes of the database's
    // state: the tail has those lines at first, and nothing more comes on its own.
    await expect.poll(async () => (await log.textContent()) ?? '', { timeout: 15_000 }).toContain('fake-telemetry probing');
    const before = new Set(((await log.textContent()) ?? '').split('\n'));
    let loads = 0;
    page.on('load', () => loads++);
    await watchPage(page, 'before the new line');

    // A restart makes it write: a shutdown line from the old process, a start line (with a new time) from the new.
    const r = await stack.post('/v1/components/telemetry:restart?wait=health&timeout=60s');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await page.waitForFunction(
      (old) => (document.querySelector('#log')?.textContent ?? '').split('\n').some((line) => line.includes('fake-telemetry probing') && !old.includes(line)),
      [...before],
      { timeout: 20_000 },
    );
    expect(await markerOf(page)).toBe('before the new line');
    expect(loads).toBe(0);
    expect(page.url()).toMatch(/#\/components\/telemetry$/);
  });

  it('from the keyboard: Tab reaches the first Restart button (focus visible), Enter opens the dialog, Escape closes it', async () => {
    const pids = await stack.waitAllRunning();
    const { page } = await signedIn();
    // The overview as it loads for a signed-in browser: the focus at the start of the document.
    await page.reload();
    await waitRowsRunning(page);
    let reached = false;
    for (let i = 0; i < 80 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.tagName === 'BUTTON' && document.activeElement.textContent?.trim() === 'Restart');
    }
    expect(reached, 'a Restart button within 80 Tabs').toBe(true);
    const focus = await page.evaluate(() => {
      const first = Array.from(document.querySelectorAll('button')).find((b) => b.textContent?.trim() === 'Restart');
      const active = document.activeElement!;
      const s = window.getComputedStyle(active);
      return { first: first === active, label: active.getAttribute('aria-label'), visible: active.matches(':focus-visible'), outline: s.outlineStyle, shadow: s.boxShadow };
    });
    expect(focus.first, 'the first Restart button in the document').toBe(true);
    expect(focus.label).toMatch(/^Restart \S+/);
    expect(focus.visible).toBe(true);
    expect(focus.outline !== 'none' || focus.shadow !== 'none', `a visible focus: ${JSON.stringify(focus)}`).toBe(true);

    await page.keyboard.press('Enter');
    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    expect(await dialog.evaluate((d: PageElement) => d.hasAttribute('open'))).toBe(true);
    await dialog.locator('ul[data-list="startOrder"] li').first().waitFor({ timeout: 10_000 });
    expect((await dialog.locator('button[data-confirm]').textContent())?.trim()).toBe(focus.label);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden', timeout: 5_000 });
    // Escape is a cancel: nothing was restarted.
    expect(await stack.waitAllRunning()).toEqual(pids);
  });

  it('plain and accessible: lang="en", one <main>, headings in order, every button named, the state as a word; dark scheme too', async () => {
    await stack.waitAllRunning();
    const { page } = await signedIn({ colorScheme: 'dark' });
    await waitRowsRunning(page);
    const structure = () =>
      page.evaluate(() => {
        const levels = Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6')).map((h) => Number(h.tagName.slice(1)));
        const unnamed = Array.from(document.querySelectorAll('button, a[href]'))
          .filter((b) => !(b.getAttribute('aria-label') ?? b.textContent ?? '').trim())
          .map((b) => b.tagName);
        return { lang: document.documentElement.lang, mains: document.querySelectorAll('main').length, levels, unnamed };
      });
    const inOrder = (levels: number[]) => levels.length > 0 && levels[0] === 1 && levels.every((l, i) => i === 0 || l <= levels[i - 1]! + 1);
    for (const view of ['overview', 'component page']) {
      if (view === 'component page') {
        await page.locator('#components tr[data-component="influxdb"] [data-col="name"] a').click();
        await page.locator('section#component').waitFor();
      }
      const s = await structure();
      expect(s.lang, view).toBe('en');
      expect(s.mains, view).toBe(1);
      expect(inOrder(s.levels), `${view}: heading levels ${JSON.stringify(s.levels)}`).toBe(true);
      expect(s.unnamed, `${view}: buttons and links without a name`).toEqual([]);
    }
    // The component page says its state as a word, not only as a colour.
    expect(await page.locator('section#component').textContent()).toContain('running');
    // Dark: the page follows prefers-color-scheme (its background is not the light one).
    const background = await page.evaluate(() => window.getComputedStyle(document.body).backgroundColor);
    const [r, g, b] = (background.match(/\d+(\.\d+)?/g) ?? []).map(Number);
    expect((r ?? 255) + (g ?? 255) + (b ?? 255), `body background in the dark scheme: ${background}`).toBeLessThan(3 * 128);
  });

  it('screenshots of the overview (desktop and phone) and a component page; at phone width no horizontal scroll', async () => {
    const out = process.env.KEYSTONE_SCREENSHOT_DIR ? resolve(process.env.KEYSTONE_SCREENSHOT_DIR) : mkdtempSync(join(tmpdir(), 'keystone-screenshots-'));
    if (!process.env.KEYSTONE_SCREENSHOT_DIR) scratch.push(out);
    mkdirSync(out, { recursive: true });
    await stack.waitAllRunning();

    /** The overview as a person sees it once it has settled: every row running, the graph, the revision, live. */
    const settle = async (page: Page) => {
      await waitRowsRunning(page);
      await page.waitForFunction(() => document.querySelectorAll('#graph g.node').length === 4 && document.querySelector('#live')?.textContent?.trim() === 'live', undefined, { timeout: 15_000 });
      await page.locator('section#revision').waitFor();
      await page.locator('section#history').waitFor();
    };

    const desktop = await signedIn({ viewport: { width: 1280, height: 800 } });
    await settle(desktop.page);
    await desktop.page.screenshot({ path: join(out, 'dashboard-desktop.png'), fullPage: true, animations: 'disabled' });
    await desktop.page.locator('#components tr[data-component="api"] [data-col="name"] a').click();
    await desktop.page.locator('section#component').waitFor();
    await expect.poll(async () => (await desktop.page.locator('#log').textContent()) ?? '', { timeout: 15_000 }).toContain('fake-api');
    await desktop.page.screenshot({ path: join(out, 'dashboard-component.png'), fullPage: true, animations: 'disabled' });

    const phone = await signedIn({ viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    await settle(phone.page);
    const widths = await phone.page.evaluate(() => ({ inner: window.innerWidth, scroll: document.documentElement.scrollWidth }));
    // 375: the page declares a device-width viewport (else a phone lays it out 980 px wide and zooms it out).
    expect(widths.inner).toBe(375);
    expect(widths.scroll, 'document width at 375 px').toBeLessThanOrEqual(widths.inner);
    await phone.page.screenshot({ path: join(out, 'dashboard-phone.png'), fullPage: true, animations: 'disabled' });

    for (const [name, width] of [['dashboard-desktop.png', 1280], ['dashboard-component.png', 1280], ['dashboard-phone.png', 750]] as const) {
      const file = join(out, name);
      const png = readFileSync(file);
      expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), `${name} is a PNG`).toBe(true);
      // IHDR: width and height, big-endian, at 16 and 20.
      expect(png.readUInt32BE(16), `${name} width`).toBe(width);
      expect(png.readUInt32BE(20), `${name} height`).toBeGreaterThanOrEqual(width === 750 ? 1624 : 800);
      // A blank page compresses to a few KB; a rendered dashboard does not.
      expect(statSync(file).size, `${name} size`).toBeGreaterThan(20_000);
    }
  });

  it("first load: every request goes to the agent's origin; the login page loads only public assets; the bytes transferred", async () => {
    await stack.waitAllRunning();
    const { context, page } = await open();
    const origins = new Set<string>();
    page.on('request', (r) => origins.add(new URL(r.url()).origin));
    const net = await recordNetwork(context, page);
    const settled = () => expect.poll(() => [...net.requests.values()].filter((r) => !r.finished && !isStream(r.url)).map((r) => r.url), { timeout: 15_000 }).toEqual([]);

    const shell = await page.goto(`${stack.origin}/`);
    await page.locator('form#login').waitFor({ timeout: 15_000 });
    await settled();
    expect([...origins]).toEqual([stack.origin]);
    // The page allows nothing but its own origin (no inline scripts or styles, no framing), as the contract spells it.
    const csp = (await shell!.headerValue('content-security-policy')) ?? '';
    const directives = (v: string) => v.split(';').map((d) => d.trim().replace(/\s+/g, ' ')).filter(Boolean).sort();
    expect(directives(csp)).toEqual(
      directives("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    );
    const login = [...net.requests.values()];
    const assetsOf = (rs: NetworkRecord[]) => rs.map((r) => new URL(r.url).pathname).filter((p) => !p.startsWith('/v1/'));
    // Before signing in, the API is asked only whether this browser has a session.
    expect(login.map((r) => new URL(r.url).pathname).filter((p) => p.startsWith('/v1/') && p !== '/v1/session'), 'API calls before signing in').toEqual([]);
    await page.locator('form#login input[name="token"]').fill(stack.token);
    await page.locator('form#login button[type="submit"]').click();
    await waitRowsRunning(page);
    await page.locator('svg#graph g.node').first().waitFor();
    await page.locator('section#revision').waitFor();
    await page.locator('section#history').waitFor();
    await settled();
    expect([...origins]).toEqual([stack.origin]);

    const all = [...net.requests.values()];
    // The login page loaded only what the agent serves without a session (the shell, the entry and its imports); the
    // app came after signing in, and is served to a signed-in browser only (dist/web/manifest.json "public").
    const before = new Set(assetsOf(login));
    const later = assetsOf(all).filter((p) => !before.has(p));
    expect(later.filter((p) => p.startsWith('/assets/')), 'the app chunk, loaded once signed in').not.toEqual([]);
    const anonymous = async (p: string) => (await fetch(`${stack.origin}${p}`, { headers: { 'accept-encoding': 'br' } })).status;
    for (const p of [...before].filter((p) => p !== '/favicon.ico')) expect(await anonymous(p), `${p} without a session`).toBe(200);
    for (const p of later.filter((p) => p.startsWith('/assets/'))) expect(await anonymous(p), `${p} without a session`).toBe(401);

    const bytes = (rs: NetworkRecord[]) => rs.reduce((n, r) => n + (r.encodedBytes ?? 0), 0);
    const line = (r: NetworkRecord) => `  ${String(r.encodedBytes ?? '(open)').padStart(7)} ${r.contentEncoding ?? '-'} ${r.status ?? ''} ${new URL(r.url).pathname}${new URL(r.url).search}`;
    console.log(
      [
        `dashboard first load: ${bytes(login)} bytes transferred for the login page (${login.length} requests), ${bytes(all)} bytes in all once signed in (${all.length} requests; event streams not counted)`,
        ...all.map(line),
      ].join('\n'),
    );
    expect(bytes(all)).toBeGreaterThan(0);
  });
});
