// Issue 19: what the device dashboard lets in and what it refuses, in a real browser (Debian's chromium, driven by
// playwright-core) against the real agent running the example's process-only stack: signing in with the token, a
// wrong token, a session without its CSRF header, a page of another origin, a signed-out session, and what a first
// load fetches (only the agent's origin; before sign-in, only the login page's files). The DOM, routes and cookies are
// those docs/dashboard.md describes. One agent for the file; each test its own browser context.
import { describe, expect, it } from 'vitest';
import { needs } from '../support/requirements.js';
import {
  COMPONENTS,
  recordNetwork,
  type NetworkRecord,
  type PageDocument,
  type PageElement,
  type PageWindow,
} from '../dashboard/dashboard-world.js';
import { dashboardBrowser, isStream } from '../dashboard/dashboard-browser.js';

declare const window: PageWindow;
declare const document: PageDocument;

const browserNeeded = needs('chromium');

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard in a browser: access'),
  { timeout: 120_000 },
  () => {
    const b = dashboardBrowser();
    const { open, signedIn, waitRowsRunning, csrfOf, fetchFromPage } = b;

    // First in the file on purpose: the agent logs the first refusal from a source address in full and only counts the
    // next ones for a minute (src/api/refusal-log.ts), and every page here connects from 127.0.0.1. Run first, the foreign
    // page's refusal is the one logged with its code; the session is set through a request, not a page, so that no page
    // load (whose session check is refused while signed out) comes before it.
    it('a page of another origin reads nothing of the API, session or not, and the agent refuses it (403 KS_FOREIGN_ORIGIN)', async () => {
      const pids = await b.stack.waitAllRunning();
      const mark = b.stack.agent.mark();
      const { context, page } = await open();
      // This browser is signed in to the dashboard: the worst case, its session cookie is in the jar.
      const signin = await context.request.post(`${b.stack.origin}/v1/session`, { data: { token: b.stack.token } });
      expect(signin.status(), await signin.text()).toBe(200);
      // The CSRF token, which the sign-in answers in its body (this page could not read it; the test knows it anyway).
      const { csrf } = (await signin.json()) as { csrf: string };
      const net = await recordNetwork(context, page);
      await page.goto(b.foreign.url);
      expect(await page.evaluate(() => document.documentElement.textContent)).toContain('nothing to see');

      const results = await page.evaluate(
        async ({ api, csrf }) => {
          const attempt = async (
            what: string,
            run: () => Promise<{ type: string; status: number; text: () => Promise<string> }>,
          ) => {
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
            await attempt('GET+csrf', () =>
              fetch(`${api}/v1/components`, { credentials: 'include', headers: { 'X-Keystone-CSRF': csrf } }),
            ),
            // A blind write (no-cors needs no preflight): the page gets an opaque answer, the agent must do nothing.
            await attempt('POST', () =>
              fetch(`${api}/v1/components/influxdb:restart`, {
                method: 'POST',
                mode: 'no-cors',
                credentials: 'include',
              }),
            ),
          ];
        },
        { api: b.stack.origin, csrf },
      );
      expect(results).toEqual([
        { what: 'GET', error: expect.stringContaining('TypeError') },
        { what: 'GET+csrf', error: expect.stringContaining('TypeError') },
        { what: 'POST', type: 'opaque', status: 0, body: '' },
      ]);

      // What the agent answered, as the browser's network saw it (the page could not): 403 to every request that reached
      // it, the preflight of the request with the header included; that request itself was never sent.
      const toAgent = () => [...net.requests.values()].filter((r) => r.url.startsWith(`${b.stack.origin}/`));
      const answered = () => toAgent().filter((r) => r.status !== undefined);
      await expect
        .poll(
          () =>
            answered()
              .map((r) => r.method)
              .sort(),
          { timeout: 10_000 },
        )
        .toEqual(['GET', 'OPTIONS', 'POST']);
      expect(
        answered()
          .map((r) => `${r.method} ${r.status}`)
          .sort(),
      ).toEqual(['GET 403', 'OPTIONS 403', 'POST 403']);
      expect(answered().find((r) => r.method === 'POST')?.url).toBe(`${b.stack.origin}/v1/components/influxdb:restart`);
      await expect
        .poll(
          () =>
            toAgent()
              .filter((r) => r.status === undefined)
              .map((r) => r.failed ?? 'pending'),
          { timeout: 10_000 },
        )
        .toEqual(['net::ERR_FAILED']);

      // …and its log says why, with the foreign origin.
      const refusal = await b.stack.agent.waitForLog(
        (l) => l.msg === 'API request refused' && l.code === 'KS_FOREIGN_ORIGIN',
        10_000,
        mark,
        'the refusal of the foreign page (the first refusal from 127.0.0.1 since the agent started: is this test still first in the file?)',
      );
      expect(refusal).toMatchObject({ origin: b.foreign.origin });
      // The blind POST restarted nothing.
      expect(await b.stack.waitAllRunning()).toEqual(pids);
    });

    it('signs in with the token: the login form alone before; the four components running after; the token kept nowhere a script reads; the session cookie HttpOnly, SameSite=Strict; the CSRF token in no cookie', async () => {
      await b.stack.waitAllRunning();
      const { context, page } = await open();
      await page.goto(`${b.stack.origin}/`);
      const form = page.locator('form#login');
      await form.waitFor({ timeout: 15_000 });

      // Before: the form (a password field, labelled) and its help, and nothing of the device.
      const input = form.locator('input[name="token"]');
      expect(await input.getAttribute('type')).toBe('password');
      expect(await input.getAttribute('autocomplete')).toBe('off');
      expect(await input.getAttribute('aria-label')).toBe('API token');
      expect(await page.locator('body').textContent()).toContain('api-token');
      for (const sel of ['#components', '#graph', '#revision', '#history', '#component'])
        expect(await page.locator(sel).count(), sel).toBe(0);
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      const bodyText = (await page.locator('body').textContent()) ?? '';
      for (const name of ['influxdb', 'telemetry'])
        expect(bodyText, 'nothing of the device before signing in').not.toContain(name);

      await input.fill(b.stack.token);
      await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
      await page.locator('table#components').waitFor({ timeout: 15_000 });
      await waitRowsRunning(page);
      const rows = await page
        .locator('#components tr[data-component]')
        .evaluateAll((trs: PageElement[]) => trs.map((tr) => tr.getAttribute('data-component')));
      expect([...rows].sort()).toEqual([...COMPONENTS].sort());
      await page.getByRole('button', { name: 'Sign out' }).waitFor();

      // The token: not in web storage, not in a readable cookie, not in the URL, not left in the form.
      const kept = await page.evaluate(() => {
        const dump = (s: PageWindow['localStorage']) =>
          Array.from({ length: s.length }, (_, i) => `${s.key(i)}=${s.getItem(s.key(i) ?? '')}`).join('\n');
        const field = document.querySelector('input[name="token"]') as (PageElement & { value?: string }) | null;
        return {
          local: dump(window.localStorage),
          session: dump(window.sessionStorage),
          cookie: document.cookie,
          field: field?.value ?? '',
        };
      });
      expect(kept.local).not.toContain(b.stack.token);
      expect(kept.session).not.toContain(b.stack.token);
      expect(kept.cookie).not.toContain(b.stack.token);
      expect(kept.field).toBe('');
      expect(page.url()).not.toContain(b.stack.token);
      // The session cookie is HttpOnly: the page's scripts cannot even see it.
      expect(kept.cookie).not.toContain('keystone_session');

      const cookies = await context.cookies(b.stack.origin);
      const session = cookies.find((c) => c.name === 'keystone_session');
      const now = Date.now() / 1000;
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
      expect(session!.value).not.toContain(b.stack.token);
      // An expiry (Max-Age=28800, a shift), not a cookie that lives as long as the browser does.
      expect(session!.expires).toBeGreaterThan(now + 7 * 3600);
      expect(session!.expires).toBeLessThan(now + 8 * 3600 + 120);
      // The CSRF token: in this origin's storage, which no other port's page reads, and in no cookie, which every port's does.
      expect(cookies.map((c) => c.name)).toEqual(['keystone_session']);
      const csrf = await csrfOf(page);
      expect(kept.local).toContain(`keystone.csrf=${csrf}`);
      expect(kept.cookie).not.toContain(csrf);
    });

    it("a wrong token: the alert with the API's message, and no session", async () => {
      const { context, page } = await open();
      // What the API says to a wrong token, asked directly: the page must show that message.
      const direct = await fetch(`${b.stack.origin}/v1/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: 'not-the-token' }),
      });
      const refusal = (await direct.json()) as { error: { code: string; message: string } };
      expect({ status: direct.status, code: refusal.error.code }).toEqual({ status: 401, code: 'KS_TOKEN_INVALID' });

      await page.goto(`${b.stack.origin}/`);
      const form = page.locator('form#login');
      await form.waitFor({ timeout: 15_000 });
      await form.locator('input[name="token"]').fill('not-the-token');
      await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
      const alert = page.locator('[role="alert"]');
      await alert.filter({ hasText: refusal.error.message }).waitFor({ timeout: 10_000 });
      expect(await form.isVisible()).toBe(true);
      expect(await page.locator('#components').count()).toBe(0);
      const names = (await context.cookies(b.stack.origin)).filter((c) => c.value !== '').map((c) => c.name);
      expect(names).not.toContain('keystone_session');
      expect(await page.evaluate(() => window.localStorage.getItem('keystone.csrf'))).toBeNull();
    });

    it('with the session cookie but without the X-Keystone-CSRF header, the API answers 401, to reads and to dry runs alike', async () => {
      const { page } = await signedIn();
      const csrf = await csrfOf(page);
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
      expect(planned).toMatchObject({
        status: 200,
        body: { stopOrder: ['web', 'api', 'influxdb'], startOrder: ['influxdb', 'api', 'web'] },
      });
    });

    it('with a session `/` and the API answer; after "Sign out" the API answers 401 to that session and the login form is back', async () => {
      const { context, page } = await signedIn();
      const csrf = await csrfOf(page);
      const home = await fetchFromPage(page, '/');
      expect(home.status).toBe(200);
      expect(home.type).toContain('text/html');
      expect(await fetchFromPage(page, '/v1/session', { csrf })).toMatchObject({
        status: 200,
        body: { expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      });
      expect((await fetchFromPage(page, '/v1/components', { csrf })).status).toBe(200);
      const before = await context.cookies(b.stack.origin);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.locator('form#login').waitFor({ timeout: 10_000 });
      expect(await page.locator('#components').count()).toBe(0);
      expect(
        (await context.cookies(b.stack.origin)).filter((c) => c.name === 'keystone_session' && c.value !== ''),
      ).toEqual([]);
      expect(
        await page.evaluate(() => window.localStorage.getItem('keystone.csrf')),
        'the CSRF token, forgotten',
      ).toBeNull();
      expect((await fetchFromPage(page, '/v1/components', { csrf })).status).toBe(401);

      // The agent ended the session itself, not only the browser's cookie: the old cookie, put back, is refused.
      await context.addCookies(before.map((c) => ({ ...c })));
      const replay = await fetchFromPage(page, '/v1/components', { csrf });
      expect(replay.status, JSON.stringify(replay.body)).toBe(401);
    });

    it("first load: every request goes to the agent's origin; the login page loads only public assets; the bytes transferred", async () => {
      await b.stack.waitAllRunning();
      const { context, page } = await open();
      const origins = new Set<string>();
      page.on('request', (r) => origins.add(new URL(r.url()).origin));
      const net = await recordNetwork(context, page);
      const settled = () =>
        expect
          .poll(() => [...net.requests.values()].filter((r) => !r.finished && !isStream(r.url)).map((r) => r.url), {
            timeout: 15_000,
          })
          .toEqual([]);

      const shell = await page.goto(`${b.stack.origin}/`);
      await page.locator('form#login').waitFor({ timeout: 15_000 });
      await settled();
      expect([...origins]).toEqual([b.stack.origin]);
      // The page allows nothing but its own origin (no inline scripts or styles, no framing), as docs/dashboard.md spells it.
      const csp = (await shell!.headerValue('content-security-policy')) ?? '';
      const directives = (v: string) =>
        v
          .split(';')
          .map((d) => d.trim().replace(/\s+/g, ' '))
          .filter(Boolean)
          .sort();
      expect(directives(csp)).toEqual(
        directives(
          "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
      );
      const login = [...net.requests.values()];
      const assetsOf = (rs: NetworkRecord[]) =>
        rs.map((r) => new URL(r.url).pathname).filter((p) => !p.startsWith('/v1/'));
      // Before signing in, the API is asked only whether this browser has a session.
      expect(
        login.map((r) => new URL(r.url).pathname).filter((p) => p.startsWith('/v1/') && p !== '/v1/session'),
        'API calls before signing in',
      ).toEqual([]);
      await page.locator('form#login input[name="token"]').fill(b.stack.token);
      await page.locator('form#login button[type="submit"]').click();
      await waitRowsRunning(page);
      await page.locator('svg#graph g.node').first().waitFor();
      await page.locator('section#revision').waitFor();
      await page.locator('section#history').waitFor();
      await settled();
      expect([...origins]).toEqual([b.stack.origin]);

      const all = [...net.requests.values()];
      // The login page loaded only what the agent serves without a session (the shell, the entry and its imports); the
      // app came after signing in, and is served to a signed-in browser only (dist/web/manifest.json "public").
      const before = new Set(assetsOf(login));
      const later = assetsOf(all).filter((p) => !before.has(p));
      expect(
        later.filter((p) => p.startsWith('/assets/')),
        'the app chunk, loaded once signed in',
      ).not.toEqual([]);
      const anonymous = async (p: string) =>
        (await fetch(`${b.stack.origin}${p}`, { headers: { 'accept-encoding': 'br' } })).status;
      for (const p of [...before].filter((p) => p !== '/favicon.ico'))
        expect(await anonymous(p), `${p} without a session`).toBe(200);
      for (const p of later.filter((p) => p.startsWith('/assets/')))
        expect(await anonymous(p), `${p} without a session`).toBe(401);

      const bytes = (rs: NetworkRecord[]) => rs.reduce((n, r) => n + (r.encodedBytes ?? 0), 0);
      const line = (r: NetworkRecord) =>
        `  ${String(r.encodedBytes ?? '(open)').padStart(7)} ${r.contentEncoding ?? '-'} ${r.status ?? ''} ${new URL(r.url).pathname}${new URL(r.url).search}`;
      console.log(
        [
          `dashboard first load: ${bytes(login)} bytes transferred for the login page (${login.length} requests), ${bytes(all)} bytes in all once signed in (${all.length} requests; event streams not counted)`,
          ...all.map(line),
        ].join('\n'),
      );
      expect(bytes(all)).toBeGreaterThan(0);
    });
  },
);
