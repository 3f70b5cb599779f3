// Issue 32 in the dashboard, in a real browser (Debian's chromium, driven by playwright-core): the header names the
// agent's version and, when GET /v1/revision's `agent.update` tells of one (SPEC §17), the update on trial, put back,
// or not possible here, as a word and a sentence. An in-process agent (test/api/api-stack.ts) on one plain process
// serves the built page (dist/web: `npm run build`), its `agentUpdate` hook set by the test; each look a fresh page.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentUpdateView } from '../../src/agent-update/agent-home.js';
import { apiStack, type ApiStack } from '../api/api-stack.js';
import { launchChromium } from '../support/browser.js';
import { needs } from '../support/requirements.js';
import { sleeper } from '../support/stack-fixture.js';

const browserNeeded = needs('chromium');
const C = '3cae32fcfc872e15fd7a9c57934db48a970e6819';

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard header: the agent version and its update'),
  { timeout: 120_000 },
  () => {
    let s: ApiStack;
    let browser: Browser;
    let origin: string;
    let update: AgentUpdateView | undefined;
    const problems: string[] = [];

    beforeAll(async () => {
      s = await apiStack({ components: () => [sleeper('db')], agentUpdate: () => update });
      const { port } = await s.listen();
      origin = `http://127.0.0.1:${port}`;
      browser = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await s?.close();
    }, 60_000);

    /** A fresh context, signed in through the login form as a person does; the header once it names the agent. */
    async function header(): Promise<{ page: Page; close: () => Promise<void> }> {
      const context = await browser.newContext({ colorScheme: 'light' });
      const page = await context.newPage();
      page.on('pageerror', (err) => problems.push(`uncaught in the page: ${err.message}`));
      page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
      });
      await page.goto(`${origin}/`);
      const form = page.locator('form#login');
      await form.waitFor({ timeout: 15_000 });
      await form.locator('input[name="token"]').fill(s.token);
      await form.locator('button[type="submit"]', { hasText: 'Sign in' }).click();
      await page.locator('table#components').waitFor({ timeout: 15_000 });
      await page.locator('header [data-field="agent"]').filter({ hasText: 'agent pid' }).waitFor({ timeout: 15_000 });
      return { page, close: () => context.close() };
    }

    it('no update: the version, and no update line', async () => {
      update = undefined;
      const { page, close } = await header();
      try {
        expect(await page.locator('header [data-field="agent"]').textContent()).toMatch(
          new RegExp(`agent pid ${process.pid} · v\\d+\\.\\d+\\.\\d+`),
        );
        expect(await page.locator('header [data-field="agent-update"]').count()).toBe(0);
      } finally {
        await close();
      }
      expect(problems).toEqual([]);
    });

    it('a trial (and one with the version waiting for it), a failed update put back, and a fleet version this agent cannot update itself to: each its word and sentence', async () => {
      const cases: Array<[AgentUpdateView, string, string, RegExp]> = [
        [
          { state: 'trial', version: '0.2.0', commit: C, since: new Date(Date.now() - 120_000).toISOString() },
          'agent on trial',
          'tone-busy',
          /^agent on trial v0\.2\.0 since \S.*, until it reports success for 3cae32fcfc87$/,
        ],
        [
          {
            state: 'trial',
            version: '0.2.0',
            commit: C,
            since: new Date(Date.now() - 60_000).toISOString(),
            next: '0.3.0',
            nextCommit: 'd'.repeat(40),
          },
          'agent on trial',
          'tone-busy',
          /^agent on trial v0\.2\.0 since \S.*, until it reports success for 3cae32fcfc87; v0\.3\.0 \(commit dddddddddddd\) waits for it$/,
        ],
        [
          { state: 'failed', version: '0.3.0', commit: C, reason: 'the new agent exited 1 at start' },
          'agent update failed',
          'tone-bad',
          /^agent update failed v0\.3\.0 was put back \(commit 3cae32fcfc87\): the new agent exited 1 at start$/,
        ],
        [
          { state: 'unsupported', version: '0.2.0', reason: 'not run from the keystone package' },
          'no self-update',
          'tone-warn',
          /^no self-update the fleet names v0\.2\.0; this agent cannot update itself \(not run from the keystone package\)$/,
        ],
      ];
      for (const [u, word, tone, sentence] of cases) {
        update = u;
        const { page, close } = await header();
        try {
          const line = page.locator(`header [data-field="agent-update"][data-state="${u.state}"]`);
          await line.waitFor({ timeout: 15_000 });
          const badge = line.locator('.badge');
          expect(await badge.textContent()).toBe(word);
          expect(await badge.getAttribute('class')).toContain(tone);
          expect(((await line.textContent()) ?? '').replace(/\s+/g, ' ').trim(), u.state).toMatch(sentence);
          // The agent's own version stays beside it: the one running now.
          expect(await page.locator('header [data-field="agent"]').textContent()).toMatch(/· v\d+\.\d+\.\d+/);
        } finally {
          await close();
        }
      }
      expect(problems).toEqual([]);
    });
  },
);
