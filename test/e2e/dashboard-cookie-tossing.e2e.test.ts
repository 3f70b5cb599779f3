// Issue 28, finding 8: cookie tossing on loopback. Cookies belong to a host, every port included, so a component's own
// web page on another loopback port (the example's web runs one on 127.0.0.1:18088) can read the cookies a script may
// read and plant its own for the dashboard's port. It plants `keystone_session` with `Path=/v1`, which the browser
// sends before the operator's own (a longer path goes first), from its server (HttpOnly) and from its script, and
// overwrites a CSRF cookie if there is one. In real Chromium: the planted page reads no CSRF value, the operator's page
// keeps working, and once the other port has replaced the operator's own session cookie, signing in again works.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs } from '../support/requirements.js';
import type { PageWindow } from '../dashboard/dashboard-world.js';
import { dashboardBrowser } from '../dashboard/dashboard-browser.js';

declare const window: PageWindow & { seenCookies?: string };

const browserNeeded = needs('chromium');

/**
 * The component's page: one loopback port, plain HTTP like the dashboard. Its server sets cookies for 127.0.0.1 (which
 * the browser keeps for every port), and its script records what `document.cookie` shows it before planting more.
 */
async function startComponentPage(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    // `/replace`: the operator's own session cookie (Path=/) is overwritten, which no attribute can prevent.
    const own =
      req.url === '/replace'
        ? [
            'keystone_session=replaced-by-the-other-port; Path=/; HttpOnly; SameSite=Strict',
            '__Host-keystone_session=replaced; Secure; Path=/; HttpOnly; SameSite=Strict',
          ]
        : [];
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'set-cookie': ['keystone_session=planted-by-its-server; Path=/v1; HttpOnly; SameSite=Strict', ...own],
    });
    res.end(
      '<!doctype html><html lang="en"><title>a component</title><p>a component</p><script>' +
        'window.seenCookies = document.cookie;' +
        "document.cookie = 'keystone_session=planted-by-its-script; Path=/v1/components';" +
        "document.cookie = 'keystone_csrf=planted-csrf; Path=/';" +
        '</script></html>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard in a browser: a page on another loopback port'),
  { timeout: 120_000 },
  () => {
    const b = dashboardBrowser();
    const { open, signIn, signedIn, waitRowsRunning, csrfOf, fetchFromPage } = b;
    let component: Awaited<ReturnType<typeof startComponentPage>>;
    beforeAll(async () => {
      component = await startComponentPage();
    });
    afterAll(async () => {
      await component?.close();
    });

    /** Opens the component's page in the operator's browser (a second tab), and returns what its script could read. */
    async function visitComponentPage(page: Page, path = ''): Promise<string> {
      await page.goto(`${component.url}${path}`);
      await page.waitForFunction(() => window.seenCookies !== undefined);
      return page.evaluate(() => window.seenCookies ?? '');
    }

    it('cannot read the CSRF value nor shadow the session: the signed-in page keeps working', async () => {
      const { context, page } = await signedIn();
      await waitRowsRunning(page);
      const csrf = await csrfOf(page);
      const other = await context.newPage();
      const seen = await visitComponentPage(other);
      expect(seen, 'what the other port’s script reads of the cookies').not.toContain(csrf);
      expect(seen).not.toMatch(/keystone/);

      // The planted cookies are in the jar, and the browser sends them first to the dashboard's API paths.
      const forApi = (await context.cookies(`${b.stack.origin}/v1/components/x`))
        .filter((c) => c.name === 'keystone_session')
        .map((c) => c.path);
      expect(forApi.sort()).toEqual(['/', '/v1', '/v1/components']);

      // The operator's page, reloaded, is still signed in and shows the device; the API answers its requests.
      await page.reload();
      await page.locator('table#components').waitFor({ timeout: 15_000 });
      await waitRowsRunning(page);
      expect(await page.locator('form#login').count()).toBe(0);
      expect((await fetchFromPage(page, '/v1/components', { csrf: await csrfOf(page) })).status).toBe(200);
      const dry = await fetchFromPage(page, '/v1/components/influxdb:restart?dry=true', {
        method: 'POST',
        csrf: await csrfOf(page),
      });
      expect(dry.status, JSON.stringify(dry.body)).toBe(200);
      // The CSRF value the other port planted is worth nothing.
      expect((await fetchFromPage(page, '/v1/components', { csrf: 'planted-csrf' })).status).toBe(401);
    });

    it('once the other port has replaced the session cookie, signing in again works, its planted cookies still there', async () => {
      const { context, page } = await signedIn();
      const other = await context.newPage();
      await visitComponentPage(other, 'replace');
      expect(
        (await context.cookies(`${b.stack.origin}/v1/components/x`))
          .filter((c) => c.name === 'keystone_session')
          .map((c) => c.path)
          .sort(),
      ).toEqual(['/', '/v1', '/v1/components']);

      // Signed out: the browser no longer holds the operator's session. The login form comes back…
      await page.reload();
      await page.locator('form#login').waitFor({ timeout: 15_000 });
      // …and signing in again brings the dashboard back, the planted cookies notwithstanding.
      await signIn(page);
      await waitRowsRunning(page);
      expect((await fetchFromPage(page, '/v1/components', { csrf: await csrfOf(page) })).status).toBe(200);
      // A fresh tab of the same browser is signed in too (the CSRF value is the origin's, not the tab's).
      const again = await context.newPage();
      await again.goto(`${b.stack.origin}/`);
      await again.locator('table#components').waitFor({ timeout: 15_000 });
      await waitRowsRunning(again);
    });

    it('a browser that never signed in: the planted cookies get it nothing', async () => {
      const { context, page } = await open();
      const other = await context.newPage();
      await visitComponentPage(other);
      await page.goto(`${b.stack.origin}/`);
      await page.locator('form#login').waitFor({ timeout: 15_000 });
      expect((await fetchFromPage(page, '/v1/components', { csrf: 'planted-csrf' })).status).toBe(401);
    });
  },
);
