// The dashboard bench's visits, each in a fresh browser context (cold cache): the floor page, the login page and the
// signed-in overview, with their paints, the moments the table and the graph are complete, and the bytes fetched.
import type { Browser, Page } from 'playwright-core';
import { PAGE_TIMEOUT_MS } from './options.js';
import { recordNetwork } from './network.js';
import type { Expected, Session } from './stack.js';

/** When each response of the page ended, ms since navigation start, by path. */
export type Timeline = Record<string, number | null>;

// The globals of the page, for the functions playwright runs there (this project's TypeScript has no DOM library).
interface PageElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
  innerText: string;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
  body: PageElement;
};
/** Resource Timing and Navigation Timing entries, as the page reads them. */
interface PageTimingEntry {
  name: string;
  startTime: number;
  responseEnd: number;
  domContentLoadedEventEnd: number;
}
declare const performance: {
  now(): number;
  getEntriesByName(name: string): PageTimingEntry[];
  getEntriesByType(type: string): PageTimingEntry[];
};
declare const window: {
  localStorage: { setItem(key: string, value: string): void };
  ksTableAt?: number;
  ksGraphAt?: number;
};

/** A fresh context (cold cache) with one page, console errors and page errors collected. */
async function freshPage(browser: Browser, session?: Session) {
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
  const errors: string[] = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  return { context, page, errors };
}

/** The page's first contentful paint (ms since navigation start), once the browser has recorded it. */
const fcpOf = (page: Page): Promise<number> =>
  page
    .waitForFunction(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? false, undefined, {
      polling: 'raf',
      timeout: PAGE_TIMEOUT_MS,
    })
    .then((h) => h.jsonValue() as Promise<number>);

/** When each request of the page ended (ms since navigation start, Resource Timing), by path: where the time goes. */
const timelineOf = (page: Page, origin: string): Promise<Timeline> =>
  page.evaluate((origin) => {
    const nav = performance.getEntriesByType('navigation')[0];
    const out: Record<string, number | null> = {
      document: nav ? Math.round(nav.responseEnd * 10) / 10 : null,
      domContentLoaded: nav ? Math.round(nav.domContentLoadedEventEnd * 10) / 10 : null,
    };
    for (const e of performance.getEntriesByType('resource')) {
      const key = e.name.startsWith(origin) ? e.name.slice(origin.length).split('?', 1)[0]! : e.name;
      out[key in out ? `${key} (again)` : key] = Math.round(e.responseEnd * 10) / 10;
    }
    return out;
  }, origin);

export async function visitFloor(browser: Browser, url: string) {
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

export async function visitLogin(browser: Browser, origin: string) {
  const { context, page, errors } = await freshPage(browser);
  try {
    const net = await recordNetwork(context, page);
    await page.goto(`${origin}/`, { waitUntil: 'commit' });
    const formMs = await page
      .waitForFunction(
        () => (document.querySelector('form#login input[name="token"]') ? performance.now() : false),
        undefined,
        { polling: 'raf', timeout: PAGE_TIMEOUT_MS },
      )
      .then((h) => h.jsonValue() as Promise<number>)
      .catch(async (err: Error) => {
        const text = await page.evaluate(() => document.body?.innerText.slice(0, 400) ?? '').catch(() => '?');
        const list = net.tally(origin).requests;
        const reqs = list.map((r) => `${r.path} ${r.status ?? r.failed ?? 'pending'}`).join(', ');
        // The agent reads manifest.json once, at its start, and index.html on the first request: a rebuild in between
        // gives a page whose entry the old manifest does not list as public (401).
        const hint = list.some((r) => r.path.startsWith('/assets/') && r.status === 401)
          ? ' (an asset of the login page answered 401: was dist/web rebuilt after the agent started?)'
          : '';
        throw new Error(
          `the login page showed no form#login within ${PAGE_TIMEOUT_MS} ms${hint} (text: ${JSON.stringify(text)}; requests: ${reqs}; errors: ${errors.join(' | ') || 'none'}): ${err.message}`,
        );
      });
    const fcpMs = await fcpOf(page);
    const settled = await net.settled();
    return { fcpMs, formMs, settled, timeline: await timelineOf(page, origin), ...net.tally(origin), errors };
  } finally {
    await context.close();
  }
}

export async function visitOverview(
  browser: Browser,
  origin: string,
  session: Session,
  expected: Expected,
  screenshot: string | undefined,
) {
  const { context, page, errors } = await freshPage(browser, session);
  try {
    const net = await recordNetwork(context, page);
    await page.goto(`${origin}/`, { waitUntil: 'commit' });
    let seen: { tableMs: number; graphMs: number };
    try {
      seen = await page
        .waitForFunction(
          ({ rows, nodes }) => {
            const w = window;
            const now = performance.now();
            const have = new Set(
              [...document.querySelectorAll('#components tr[data-component]')].map((tr) =>
                tr.getAttribute('data-component'),
              ),
            );
            if (w.ksTableAt === undefined && rows.every((r) => have.has(r))) w.ksTableAt = now;
            if (w.ksGraphAt === undefined && document.querySelectorAll('#graph g.node').length >= nodes)
              w.ksGraphAt = now;
            return (
              w.ksTableAt !== undefined && w.ksGraphAt !== undefined && { tableMs: w.ksTableAt, graphMs: w.ksGraphAt }
            );
          },
          expected,
          { polling: 'raf', timeout: PAGE_TIMEOUT_MS },
        )
        .then((h) => h.jsonValue() as Promise<{ tableMs: number; graphMs: number }>);
    } catch (err) {
      const shown = await page.evaluate(() => ({
        rows: document.querySelectorAll('#components tr[data-component]').length,
        nodes: document.querySelectorAll('#graph g.node').length,
        text: document.body.innerText.slice(0, 400),
      }));
      throw new Error(
        `the overview did not show ${expected.rows.length} rows and ${expected.nodes} graph nodes within ${PAGE_TIMEOUT_MS} ms (it shows ${shown.rows} rows, ${shown.nodes} nodes; text: ${JSON.stringify(shown.text)}; errors: ${errors.join(' | ') || 'none'}): ${(err as Error).message}`,
      );
    }
    const fcpMs = await fcpOf(page);
    const settled = await net.settled();
    const view = await page.evaluate(() => {
      return {
        states: Object.fromEntries(
          [...document.querySelectorAll('#components tr[data-component]')].map((tr) => [
            tr.getAttribute('data-component'),
            tr.getAttribute('data-state'),
          ]),
        ),
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

/** One run: the floor, the login page and the overview. */
export interface Run {
  floor: Awaited<ReturnType<typeof visitFloor>>;
  login: Awaited<ReturnType<typeof visitLogin>>;
  overview: Awaited<ReturnType<typeof visitOverview>>;
}
