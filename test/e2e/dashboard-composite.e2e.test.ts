// Issue 19: a composite on the device dashboard, in a real browser against the real agent running the example's
// gateway plan (plans/edge-gateway.toml: the stack plus `gateway`, a composite of reports and the proxy in front of
// it): the composite has a row of its own with its members nested under it, the graph draws the members, and a
// member's page follows its own log.
import { describe, expect, it } from 'vitest';
import { needs } from '../support/requirements.js';
import { type PageDocument, type PageElement } from '../dashboard/dashboard-world.js';
import { dashboardBrowser } from '../dashboard/dashboard-browser.js';

declare const document: PageDocument;

const browserNeeded = needs('chromium');
const MEMBERS = ['gateway/reports', 'gateway/proxy'];

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard in a browser: a composite'),
  { timeout: 120_000 },
  () => {
    const b = dashboardBrowser({ plan: 'plans/edge-gateway.toml' });
    const { signedIn } = b;

    it('shows the composite with its members nested under it, draws the members in the graph, and a member has its own page and log', async () => {
      const { page } = await signedIn();
      // Every member running, in the table as the API lists it (the group's row first, its members after it).
      await page.waitForFunction(
        (members) =>
          members.every(
            (m) =>
              document.querySelector(`#components tr[data-component="${m}"]`)?.getAttribute('data-state') === 'running',
          ),
        MEMBERS,
        { timeout: 60_000 },
      );
      const rows = await page
        .locator('#components tr[data-component]')
        .evaluateAll((trs: PageElement[]) =>
          trs.map((tr) => [tr.getAttribute('data-component'), tr.getAttribute('data-member-of')]),
        );
      const at = (name: string) => rows.findIndex(([n]) => n === name);
      expect(at('gateway')).toBeGreaterThanOrEqual(0);
      expect(rows.find(([n]) => n === 'gateway')![1]).toBeNull();
      for (const m of MEMBERS) {
        expect(rows.find(([n]) => n === m)![1], `${m} is nested under gateway`).toBe('gateway');
        expect(at(m), `${m} comes after the gateway's own row`).toBeGreaterThan(at('gateway'));
      }
      // The composite's state is its members' (all running), as a word.
      await expect
        .poll(() => page.locator('#components tr[data-component="gateway"] [data-col="state"]').textContent(), {
          timeout: 30_000,
        })
        .toContain('running');

      // The graph draws units: the members, the proxy's dependency on reports among the edges the API gives.
      const graph = (await b.stack.get('/v1/graph')).body as {
        edges: Array<{ from: string; to: string; type: string }>;
      };
      const nodes = await page
        .locator('svg#graph g.node')
        .evaluateAll((gs: PageElement[]) => gs.map((g) => g.getAttribute('data-component')));
      for (const m of MEMBERS) expect(nodes).toContain(m);
      const memberEdges = graph.edges.filter((x) => x.from.startsWith('gateway/'));
      // gateway/reports → api (ordering), gateway/proxy → gateway/reports (hard) and → api (ordering).
      expect(memberEdges).toHaveLength(3);
      for (const e of memberEdges)
        expect(
          await page.locator(`svg#graph path.edge[data-from="${e.from}"][data-to="${e.to}"]`).getAttribute('data-kind'),
        ).toBe(e.type);

      // A member's page: its name, its state, and its own log.
      await page.locator('#components tr[data-component="gateway/reports"] [data-col="name"] a').click();
      await page.locator('section#component').waitFor();
      await expect
        .poll(() => page.locator('section#component h1, section#component h2').first().textContent(), {
          timeout: 15_000,
        })
        .toContain('reports');
      await expect
        .poll(async () => (await page.locator('#log').textContent()) ?? '', { timeout: 15_000 })
        .toMatch(/\S/);
    });
  },
);
