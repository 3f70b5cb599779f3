// Issue 19: what a technician does with the device dashboard, in a real browser (Debian's chromium, driven by
// playwright-core) against the real agent running the example's process-only stack: watch a crashed component come
// back live, restart the database with its dependents from the page, read the graph and a live log tail, use it from
// the keyboard, in the dark scheme and on a phone; the README's screenshots. The DOM is the one docs/dashboard.md
// describes. One agent for the file; each test its own browser context.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { needs } from '../support/requirements.js';
import { mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { COMPONENTS, type PageDocument, type PageElement, type PageWindow } from '../dashboard/dashboard-world.js';
import { dashboardBrowser } from '../dashboard/dashboard-browser.js';

declare const window: PageWindow;
declare const document: PageDocument;

const browserNeeded = needs('chromium');

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard in a browser: views and actions'),
  { timeout: 120_000 },
  () => {
    const b = dashboardBrowser();
    const { signedIn, waitRowsRunning, watchPage, seenOnPage, markerOf } = b;

    it('a component that keeps crashing: its row shows backoff and then running again with a new pid, live, without a reload', async () => {
      // The agent restarts a crashed component after ~100 ms the first time, then doubles the wait (SPEC §5; the crash
      // loop budget counts restarts until a healthy spell of 10 min): too short a `backoff` for a page that refetches on
      // events (at most ~4 times a second) to be sure to show it. Four crashes first: the fifth waits 1.3-1.9 s.
      let pids = await b.stack.waitAllRunning();
      for (let i = 0; i < 4; i++) {
        const old = pids.telemetry!;
        process.kill(old, 'SIGKILL');
        const deadline = Date.now() + 30_000;
        while ((pids = await b.stack.waitAllRunning()).telemetry === old) {
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
      expect(Number((await row.locator('[data-col="restarts"]').textContent())?.trim()), 'the restarts cell').toBe(
        restartsBefore + 1,
      );
      // Without a reload: the marker is still on the window and no load event came.
      expect(await markerOf(page)).toBe('before the kill');
      expect(loads).toBe(0);
      const now = await b.stack.waitAllRunning();
      expect(await row.locator('[data-col="instance"]').textContent()).toContain(`pid ${now.telemetry}`);
    });

    it('restarts influxdb from the page: the dialog shows the dry run (dependents, untouched), then healthy, with new pids for it and its dependents', async () => {
      const pids = await b.stack.waitAllRunning();
      const { page } = await signedIn();
      await waitRowsRunning(page);
      await watchPage(page, 'before the restart');
      await page
        .locator('#components tr[data-component="influxdb"] [data-col="actions"] button', { hasText: /^Restart$/ })
        .click();

      const dialog = page.locator('dialog#confirm');
      await dialog.waitFor({ state: 'visible', timeout: 10_000 });
      await dialog.locator('ul[data-list="stopOrder"] li').first().waitFor({ timeout: 10_000 });
      const list = async (name: string) =>
        (await dialog.locator(`ul[data-list="${name}"] li`).allTextContents()).map((t) => t.trim());
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
      expect((await status.getAttribute('class')) ?? '').not.toContain('error');
      const seen = await seenOnPage(page);
      expect(
        seen['#action-status']!.some((t) => t.includes('restarting influxdb')),
        `#action-status showed ${JSON.stringify(seen['#action-status'])}`,
      ).toBe(true);
      // The table followed the restart while the page waited: influxdb and its hard dependents left running and came
      // back; telemetry (ordering on influxdb) was left alone, as the dialog said.
      for (const n of ['influxdb', 'api', 'web']) {
        expect(
          seen[n]!.some((s) => s !== 'running'),
          `${n} row states ${JSON.stringify(seen[n])}`,
        ).toBe(true);
      }
      expect(seen.telemetry).toEqual(['running']);

      const after = await b.stack.waitAllRunning();
      expect(after.influxdb).not.toBe(pids.influxdb);
      expect(after.api).not.toBe(pids.api);
      expect(after.web).not.toBe(pids.web);
      expect(after.telemetry).toBe(pids.telemetry);
      await page.waitForFunction(
        (pid) =>
          document
            .querySelector('#components tr[data-component="influxdb"] [data-col="instance"]')
            ?.textContent?.includes(`pid ${pid}`) === true,
        after.influxdb!,
        { timeout: 10_000 },
      );
      await waitRowsRunning(page);
    });

    it('the dependency graph: a node per component in start order, an edge per dependency; ordering edges dashed and another colour than hard ones', async () => {
      await b.stack.waitAllRunning();
      const { page } = await signedIn();
      const graph = page.locator('svg#graph');
      await graph.waitFor({ timeout: 10_000 });
      expect(await graph.getAttribute('role')).toBe('img');
      expect(await graph.getAttribute('aria-label')).toBe('dependency graph');
      await page.waitForFunction(() => document.querySelectorAll('#graph g.node').length >= 4, undefined, {
        timeout: 10_000,
      });
      const nodes = await graph
        .locator('g.node')
        .evaluateAll((gs: PageElement[]) =>
          gs.map((g) => [g.getAttribute('data-component'), g.getAttribute('data-state'), g.textContent]),
        );
      expect(nodes.map(([n]) => n).sort()).toEqual([...COMPONENTS].sort());
      for (const [name, state, text] of nodes) {
        expect(state, `${name}'s node`).toBe('running');
        expect(text, 'a node shows the name and the state as a word').toContain(name);
        expect(text).toContain('running');
      }

      // One path per edge of /v1/graph, of its kind.
      const g = (await b.stack.get('/v1/graph')).body as { edges: Array<{ from: string; to: string; type: string }> };
      expect(g.edges).toHaveLength(3);
      const paths = await graph
        .locator('path.edge')
        .evaluateAll((ps: PageElement[]) =>
          ps.map((p) => `${p.getAttribute('data-from')}->${p.getAttribute('data-to')}:${p.getAttribute('data-kind')}`),
        );
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
      const along = (axis: 'x' | 'y') =>
        influx![axis] < api![axis] &&
        influx![axis] < telemetry![axis] &&
        api![axis] < web![axis] &&
        telemetry![axis] < web![axis];
      expect(along('x') || along('y'), `node boxes ${JSON.stringify({ influx, api, telemetry, web })}`).toBe(true);
    });

    it("the component page's log tail follows new lines live (no reload)", async () => {
      await b.stack.waitAllRunning();
      const { page } = await signedIn();
      await page.locator('#components tr[data-component="telemetry"] [data-col="name"] a').click();
      await page.waitForURL(/#\/components\/telemetry$/);
      const section = page.locator('section#component');
      await section.waitFor({ timeout: 10_000 });
      const log = section.locator('pre#log');
      expect(await log.getAttribute('aria-live')).toBe('polite');
      // The stand-in logs its start ("fake-telemetry probing … every 1000ms") and then only changes of the database's
      // state: the tail has those lines at first, and nothing more comes on its own.
      await expect
        .poll(async () => (await log.textContent()) ?? '', { timeout: 15_000 })
        .toContain('fake-telemetry probing');
      const before = new Set(((await log.textContent()) ?? '').split('\n'));
      let loads = 0;
      page.on('load', () => loads++);
      await watchPage(page, 'before the new line');

      // A restart makes it write: a shutdown line from the old process, a start line (with a new time) from the new.
      const r = await b.stack.post('/v1/components/telemetry:restart?wait=health&timeout=60s');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      await page.waitForFunction(
        (old) =>
          (document.querySelector('#log')?.textContent ?? '')
            .split('\n')
            .some((line) => line.includes('fake-telemetry probing') && !old.includes(line)),
        [...before],
        { timeout: 20_000 },
      );
      expect(await markerOf(page)).toBe('before the new line');
      expect(loads).toBe(0);
      expect(page.url()).toMatch(/#\/components\/telemetry$/);
    });

    it("the header shows the device's health as its reports carry it: uptime, load, memory and disk free", async () => {
      await b.stack.waitAllRunning();
      const { page } = await signedIn();
      const health = page.locator('header [data-field="health"]');
      await health.waitFor({ timeout: 15_000 });
      // The machine running the tests is Linux: these four are always there (a temperature only where a sensor is).
      for (const field of ['uptime', 'load', 'mem', 'disk'])
        expect(await health.locator(`[data-health="${field}"]`).count(), field).toBe(1);
      const text = (await health.textContent()) ?? '';
      expect(text).toMatch(/up \d+ (d|h|min)/);
      expect(text).toMatch(/load \d+\.\d\d/);
      expect(text).toMatch(/\d+(\.\d+)? (B|KB|MB|GB) memory free/);
      expect(text).toMatch(/\d+(\.\d+)? (B|KB|MB|GB) disk free/);
    });

    it('from the keyboard: Tab reaches the first Restart button (focus visible), Enter opens the dialog, Escape closes it', async () => {
      const pids = await b.stack.waitAllRunning();
      const { page } = await signedIn();
      // The overview as it loads for a signed-in browser: the focus at the start of the document.
      await page.reload();
      await waitRowsRunning(page);
      let reached = false;
      for (let i = 0; i < 80 && !reached; i++) {
        await page.keyboard.press('Tab');
        reached = await page.evaluate(
          () =>
            document.activeElement?.tagName === 'BUTTON' && document.activeElement.textContent?.trim() === 'Restart',
        );
      }
      expect(reached, 'a Restart button within 80 Tabs').toBe(true);
      const focus = await page.evaluate(() => {
        const first = Array.from(document.querySelectorAll('button')).find((b) => b.textContent?.trim() === 'Restart');
        const active = document.activeElement!;
        const s = window.getComputedStyle(active);
        return {
          first: first === active,
          label: active.getAttribute('aria-label'),
          visible: active.matches(':focus-visible'),
          outline: s.outlineStyle,
          shadow: s.boxShadow,
        };
      });
      expect(focus.first, 'the first Restart button in the document').toBe(true);
      expect(focus.label).toMatch(/^Restart \S+/);
      expect(focus.visible).toBe(true);
      expect(focus.outline !== 'none' || focus.shadow !== 'none', `a visible focus: ${JSON.stringify(focus)}`).toBe(
        true,
      );

      await page.keyboard.press('Enter');
      const dialog = page.locator('dialog#confirm');
      await dialog.waitFor({ state: 'visible', timeout: 10_000 });
      expect(await dialog.evaluate((d: PageElement) => d.hasAttribute('open'))).toBe(true);
      await dialog.locator('ul[data-list="startOrder"] li').first().waitFor({ timeout: 10_000 });
      expect((await dialog.locator('button[data-confirm]').textContent())?.trim()).toBe(focus.label);
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden', timeout: 5_000 });
      // Escape is a cancel: nothing was restarted.
      expect(await b.stack.waitAllRunning()).toEqual(pids);
    });

    it('plain and accessible: lang="en", one <main>, headings in order, every button named, the state as a word; dark scheme too', async () => {
      await b.stack.waitAllRunning();
      const { page } = await signedIn({ colorScheme: 'dark' });
      await waitRowsRunning(page);
      const structure = () =>
        page.evaluate(() => {
          const levels = Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6')).map((h) =>
            Number(h.tagName.slice(1)),
          );
          const unnamed = Array.from(document.querySelectorAll('button, a[href]'))
            .filter((b) => !(b.getAttribute('aria-label') ?? b.textContent ?? '').trim())
            .map((b) => b.tagName);
          return {
            lang: document.documentElement.lang,
            mains: document.querySelectorAll('main').length,
            levels,
            unnamed,
          };
        });
      const inOrder = (levels: number[]) =>
        levels.length > 0 && levels[0] === 1 && levels.every((l, i) => i === 0 || l <= levels[i - 1]! + 1);
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
      const [r, g, blue] = (background.match(/\d+(\.\d+)?/g) ?? []).map(Number);
      expect((r ?? 255) + (g ?? 255) + (blue ?? 255), `body background in the dark scheme: ${background}`).toBeLessThan(
        3 * 128,
      );
    });

    it('screenshots of the overview (desktop and phone) and a component page; at phone width no horizontal scroll', async () => {
      const out = process.env.KEYSTONE_SCREENSHOT_DIR
        ? resolve(process.env.KEYSTONE_SCREENSHOT_DIR)
        : mkdtempSync(join(tmpdir(), 'keystone-screenshots-'));
      if (!process.env.KEYSTONE_SCREENSHOT_DIR) b.scratch.push(out);
      mkdirSync(out, { recursive: true });
      await b.stack.waitAllRunning();

      /** The overview as a person sees it once it has settled: every row running, the graph, the revision, live. */
      const settle = async (page: Page) => {
        await waitRowsRunning(page);
        await page.waitForFunction(
          () =>
            document.querySelectorAll('#graph g.node').length === 4 &&
            document.querySelector('#live')?.textContent?.trim() === 'live',
          undefined,
          { timeout: 15_000 },
        );
        await page.locator('section#revision').waitFor();
        await page.locator('section#history').waitFor();
      };

      const desktop = await signedIn({ viewport: { width: 1280, height: 800 } });
      await settle(desktop.page);
      await desktop.page.screenshot({
        path: join(out, 'dashboard-desktop.png'),
        fullPage: true,
        animations: 'disabled',
      });
      await desktop.page.locator('#components tr[data-component="api"] [data-col="name"] a').click();
      await desktop.page.locator('section#component').waitFor();
      await expect
        .poll(async () => (await desktop.page.locator('#log').textContent()) ?? '', { timeout: 15_000 })
        .toContain('fake-api');
      await desktop.page.screenshot({
        path: join(out, 'dashboard-component.png'),
        fullPage: true,
        animations: 'disabled',
      });

      const phone = await signedIn({
        viewport: { width: 375, height: 812 },
        isMobile: true,
        hasTouch: true,
        deviceScaleFactor: 2,
      });
      await settle(phone.page);
      const widths = await phone.page.evaluate(() => ({
        inner: window.innerWidth,
        scroll: document.documentElement.scrollWidth,
      }));
      // 375: the page declares a device-width viewport (else a phone lays it out 980 px wide and zooms it out).
      expect(widths.inner).toBe(375);
      expect(widths.scroll, 'document width at 375 px').toBeLessThanOrEqual(widths.inner);
      await phone.page.screenshot({ path: join(out, 'dashboard-phone.png'), fullPage: true, animations: 'disabled' });

      for (const [name, width] of [
        ['dashboard-desktop.png', 1280],
        ['dashboard-component.png', 1280],
        ['dashboard-phone.png', 750],
      ] as const) {
        const file = join(out, name);
        const png = readFileSync(file);
        expect(
          png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
          `${name} is a PNG`,
        ).toBe(true);
        // IHDR: width and height, big-endian, at 16 and 20.
        expect(png.readUInt32BE(16), `${name} width`).toBe(width);
        expect(png.readUInt32BE(20), `${name} height`).toBeGreaterThanOrEqual(width === 750 ? 1624 : 800);
        // A blank page compresses to a few KB; a rendered dashboard does not.
        expect(statSync(file).size, `${name} size`).toBeGreaterThan(20_000);
      }
    });
  },
);
