// Issue 27 / SPEC §5 in the dashboard, in a real browser (Debian's chromium, driven by playwright-core): a failed
// apply whose component later gets healthy by itself is shown as two entries, the failure as it was and the recovery
// as its own entry beside it; the recovery never turns the failure into a success. The page is not reloaded: the
// agent's `recovered` event makes it read the history again (web/src/dashboard-data.ts). An in-process agent
// (test/api/api-stack.ts) with real processes; the component's health check is an HTTP endpoint the test serves only
// once it decides the component is well, so the failure and then the recovery are real health probes.
import { createServer, type Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiStack, type ApiStack } from '../api/api-stack.js';
import { launchChromium } from '../support/browser.js';
import { until } from '../support/composite-fixture.js';
import { needs } from '../support/requirements.js';
import { freePorts, sleeper, type ComponentSpec } from '../support/stack-fixture.js';
import type { PageElement, PageWindow } from '../dashboard/dashboard-world.js';

// The browser's globals, for the function that runs in the page (page.evaluate).
declare const window: PageWindow;

const browserNeeded = needs('chromium');

/** The path the check asks for: another test's server that comes to listen on the port answers 404 to it, not 200. */
const CHECK_PATH = '/keystone-recovery-check';

/** Runs from the start, but healthy only once the test serves its check: the first apply fails (budget 5 × 200 ms). */
function late(port: number): ComponentSpec {
  return {
    name: 'late',
    version: '1.0.0',
    command: 'sleep',
    args: ['1000'],
    health: { check: `http://127.0.0.1:${port}${CHECK_PATH}`, interval: '200ms', timeout: '1s', failureThreshold: 5 },
  };
}

interface ShownApply {
  id: number;
  outcome: string | null;
  revision: string | null;
  /** The word of the entry's badge and its colour. */
  badge: string;
  tone: string | null;
  summary: string;
  /** The names in the entry's list of failures. */
  failed: string[];
}

const text = (s: string | null) => (s ?? '').replace(/\s+/g, ' ').trim();

/**
 * The applies the page shows under #history (the overview's recent applies or the history view), top to bottom: read
 * in one go inside the page, so that a re-render between two reads cannot mix an old entry with a new one.
 */
async function shownApplies(page: Page): Promise<ShownApply[]> {
  const raw = await page.locator('#history li.apply').evaluateAll((lis: PageElement[]) =>
    lis.map((li) => {
      const badge = li.querySelector('.apply-head .badge');
      return {
        id: li.getAttribute('data-history-id'),
        outcome: li.getAttribute('data-outcome'),
        revision: li.getAttribute('data-revision'),
        badge: badge?.textContent ?? null,
        tone: badge?.getAttribute('class') ?? null,
        summary: li.querySelector('.apply-summary')?.textContent ?? null,
        failed: Array.from(li.querySelectorAll('ul.failures li strong'), (f) => f.textContent),
      };
    }),
  );
  return raw.map((e) => ({
    ...e,
    id: Number(e.id),
    badge: text(e.badge),
    summary: text(e.summary),
    failed: e.failed.map(text),
  }));
}

/** A component's row in the components table (one read in the page): its state (attribute and badge) and its health cell. */
async function shownRow(
  page: Page,
  name: string,
): Promise<{ state: string | null; badge: string; health: string } | undefined> {
  const rows = await page.locator(`#components tr[data-component="${name}"]`).evaluateAll((trs: PageElement[]) =>
    trs.map((tr) => ({
      state: tr.getAttribute('data-state'),
      badge: tr.querySelector('[data-col="state"] .badge')?.textContent ?? null,
      health: tr.querySelector('[data-col="health"]')?.textContent ?? null,
    })),
  );
  const row = rows[0];
  return row && { state: row.state, badge: text(row.badge), health: text(row.health) };
}

interface ApiHistoryEntry {
  id: number;
  revision: string;
  outcome: string;
  summary: string | null;
  failed: Array<{ name: string; reason: string }>;
}

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard: a recovery after a failed apply'),
  { timeout: 120_000 },
  () => {
    let s: ApiStack;
    let browser: Browser;
    let origin: string;
    let port: number;
    let checkServer: Server | undefined;

    beforeAll(async () => {
      [port] = (await freePorts(1)) as [number];
      // The stack applies its revision before it returns: `late` never answers its check, so the apply fails.
      s = await apiStack({ components: () => [sleeper('steady'), late(port)] });
      const listening = await s.listen();
      origin = `http://127.0.0.1:${listening.port}`;
      browser = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      if (checkServer) {
        checkServer.closeAllConnections();
        await new Promise<void>((r) => checkServer!.close(() => r()));
      }
      await browser?.close();
      await s?.close();
    }, 60_000);

    const history = async (): Promise<ApiHistoryEntry[]> => {
      const res = await s.get('/v1/history?limit=20');
      expect(res.statusCode).toBe(200);
      return (res.json() as { entries: ApiHistoryEntry[] }).entries;
    };

    it('shows the failed apply as failure, then the recovery as its own entry beside it, without a reload; the failure never becomes a success', async () => {
      const revision = await s.fx.revisionId();
      // The truth first, through the API: one row, a failure of `late`.
      const before = await history();
      expect(before.map((e) => [e.revision, e.outcome])).toEqual([[revision, 'failure']]);
      const failed = before[0]!;
      expect(failed.failed.map((f) => f.name)).toEqual(['late']);
      expect(s.agent.store.components().find((c) => c.name === 'late')?.state).not.toBe('running');

      const context = await browser.newContext({ colorScheme: 'light' });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(`uncaught in the page: ${err.message}`));
      try {
        await page.goto(`${origin}/`);
        const form = page.locator('form#login');
        await form.waitFor({ timeout: 15_000 });
        await form.locator('input[name="token"]').fill(s.token);
        await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
        await page.locator('table#components').waitFor({ timeout: 15_000 });
        // Live: the event stream is connected, so what follows reaches the page as events.
        await page.locator('#live.on').waitFor({ timeout: 15_000 });

        // The failure, as the page shows it: one entry, `failure` in the bad colour, `late` among its failures.
        const shownFailure = await until(
          async () => {
            const shown = await shownApplies(page);
            return shown.length > 0 && shown;
          },
          15_000,
          'the history panel to show the failed apply',
        );
        expect(shownFailure).toEqual([
          {
            id: failed.id,
            outcome: 'failure',
            revision,
            badge: 'failure',
            tone: 'badge tone-bad',
            summary: text(failed.summary),
            failed: ['late'],
          },
        ]);
        const beforeRow = await until(
          async () => {
            const row = await shownRow(page, 'late');
            return row?.state === 'unhealthy' && row;
          },
          15_000,
          'late shown unhealthy',
        );
        expect(beforeRow).toEqual({ state: 'unhealthy', badge: 'unhealthy', health: 'unhealthy' });

        // Marked, to see at the end that the page was never loaded again.
        await page.evaluate(() => {
          window.ksMarker = 'before the recovery';
        });

        // The component gets well by itself: its check answers now. The agent's health watch sees it and records a recovery.
        checkServer = createServer((req, res) => {
          res.statusCode = req.url === CHECK_PATH ? 200 : 404;
          res.end();
        });
        await new Promise<void>((r) => checkServer!.listen(port, '127.0.0.1', () => r()));

        // The page shows the recovery as its own entry, on top, and the failure below it unchanged.
        const shownAfter = await until(
          async () => {
            const shown = await shownApplies(page);
            return shown.some((e) => e.outcome === 'recovered') && shown;
          },
          30_000,
          'the history panel to show the recovery (the `recovered` event reads the history again)',
        );
        const after = await history();
        const recovered = after.find((e) => e.outcome === 'recovered');
        expect(recovered, 'a `recovered` row in GET /v1/history').toBeDefined();
        expect(shownAfter).toEqual([
          {
            id: recovered!.id,
            outcome: 'recovered',
            revision,
            badge: 'recovered',
            tone: 'badge tone-ok',
            summary: text(recovered!.summary),
            failed: [],
          },
          {
            id: failed.id,
            outcome: 'failure',
            revision,
            badge: 'failure',
            tone: 'badge tone-bad',
            summary: text(failed.summary),
            failed: ['late'],
          },
        ]);
        expect(recovered!.summary).toBe(
          "recovered: every component runs healthy again after the failed apply (late); the apply's outcome stays failure",
        );
        expect(
          shownAfter.filter((e) => e.outcome === 'success' || e.badge === 'success'),
          'no entry says success',
        ).toEqual([]);

        // The component, as the page shows it: running and healthy.
        const nowRow = await until(
          async () => {
            const row = await shownRow(page, 'late');
            return row?.state === 'running' && row;
          },
          15_000,
          'late shown running',
        );
        expect(nowRow).toEqual({ state: 'running', badge: 'running', health: 'healthy' });

        // The history view (a link within the page, not a load) says the same.
        await page.locator('#history a[href="#/history"]').click();
        await page.locator('h1#history-title', { hasText: 'Applies' }).waitFor({ timeout: 15_000 });
        expect(
          await until(
            async () => {
              const shown = await shownApplies(page);
              return shown.length === 2 && shown;
            },
            15_000,
            'the history view to show both entries',
          ),
        ).toEqual(shownAfter);

        expect(await page.evaluate(() => window.ksMarker), 'the page was not loaded again').toBe('before the recovery');
      } finally {
        await context.close();
      }
      expect(problems).toEqual([]);

      // The API says the same: the failure row as it was (same id, outcome and summary), the recovery a row of its own
      // after it, and no success for the revision anywhere.
      const rows = (await history()).filter((e) => e.revision === revision);
      expect(rows.map((e) => e.outcome)).toEqual(['recovered', 'failure']);
      expect(rows[1]).toEqual(failed);
      expect(rows[0]!.id).toBeGreaterThan(failed.id);
    });
  },
);
