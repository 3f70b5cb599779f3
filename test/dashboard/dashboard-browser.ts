// The browser side of the dashboard's end-to-end tests: one real agent on the example stack, one Chromium and a
// foreign site per test file (beforeAll), a fresh browser context per test, and the page-side helpers both files use:
// signing in as a person does, watching what the page shows between two looks, fetch() from inside the page.
import { rmSync } from 'node:fs';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { launchChromium } from '../support/browser.js';
import {
  COMPONENTS,
  FOREIGN_SITE_RULE,
  startDashboardStack,
  startForeignSite,
  type DashboardStack,
  type PageDocument,
  type PageWindow,
} from './dashboard-world.js';

// The browser's globals, for the functions that run in the page (page.evaluate, waitForFunction): see PageWindow.
declare const window: PageWindow;
declare const document: PageDocument;

/** Long-running event streams: they never finish loading, so they are left out of "everything has loaded". */
export const isStream = (url: string) => /\/v1\/events(\?|$)/.test(url) || /[?&]follow=true/.test(url);

/** Call inside a describe: registers the hooks and returns the stack, the browser and the helpers. */
export function dashboardBrowser(opts: { plan?: string } = {}) {
  let stack: DashboardStack;
  let browser: Browser;
  let foreign: Awaited<ReturnType<typeof startForeignSite>>;
  const contexts: BrowserContext[] = [];
  const scratch: string[] = [];

  beforeAll(async () => {
    stack = await startDashboardStack(opts);
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
          return (
            row?.getAttribute('data-state') === 'running' &&
            row.querySelector('[data-col="state"]')?.textContent?.includes('running') === true
          );
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
        for (const row of document.querySelectorAll('#components tr[data-component]'))
          add(row.getAttribute('data-component') ?? '?', row.getAttribute('data-state') ?? '');
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

  /** The CSRF token the page echoes, where the page keeps it: its origin's localStorage (never a cookie). */
  async function csrfOf(page: Page): Promise<string> {
    if (!page.url().startsWith(`${stack.origin}/`))
      throw new Error(`csrfOf: the page is at ${page.url()}, not on the dashboard's origin`);
    const csrf = await page.evaluate(() => window.localStorage.getItem('keystone.csrf'));
    expect(csrf, "the page's keystone.csrf").toBeTruthy();
    return csrf!;
  }

  /** fetch() from inside the page (its origin, its cookies): the status and the JSON body (or null). */
  function fetchFromPage(
    page: Page,
    path: string,
    init: { method?: string; csrf?: string } = {},
  ): Promise<{ status: number; body: unknown; type: string }> {
    return page.evaluate(
      async ({ path, method, csrf }) => {
        const res = await fetch(path, {
          method: method ?? 'GET',
          credentials: 'same-origin',
          headers: csrf === undefined ? {} : { 'X-Keystone-CSRF': csrf },
        });
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

  return {
    get stack() {
      return stack;
    },
    get browser() {
      return browser;
    },
    get foreign() {
      return foreign;
    },
    scratch,
    open,
    signIn,
    signedIn,
    waitRowsRunning,
    watchPage,
    seenOnPage,
    markerOf,
    csrfOf,
    fetchFromPage,
  };
}
