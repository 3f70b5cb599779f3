// SPEC §19 in the dashboard, in a real browser (Debian's chromium, driven by playwright-core): a revision waiting for
// a component's update lock is shown above the rollout holds, with its reason; once the lock is let go and the
// revision applied, the page drops it by itself (the `waiting` and `revision` events). An in-process agent
// (test/api/api-stack.ts) with a real lock held by a real flock.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { apiStack, type ApiStack } from '../api/api-stack.js';
import { launchChromium } from '../support/browser.js';
import { until } from '../support/composite-fixture.js';
import { holdLock, letGo, lockedComponent } from '../support/lock-holder.js';
import { needs } from '../support/requirements.js';

const browserNeeded = needs('chromium');

describe.skipIf(browserNeeded.skip)(
  browserNeeded.title('the dashboard: a revision waiting for an update lock'),
  { timeout: 120_000 },
  () => {
    let s: ApiStack;
    let browser: Browser;
    let origin: string;
    let holder: ChildProcess | undefined;

    beforeAll(async () => {
      s = await apiStack({ components: () => [lockedComponent('api')] });
      const { port } = await s.listen();
      origin = `http://127.0.0.1:${port}`;
      browser = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      if (holder) letGo(holder);
      await browser?.close();
      await s?.close();
    }, 60_000);

    it('shows the waiting commit and why, and drops it once the lock is let go and the revision applied', async () => {
      const lockFile = join(s.stateDir, 'components', 'api', 'work', 'run', 'update.lock');
      await until(() => existsSync(lockFile), 10_000, 'api to make its lock file');
      holder = await holdLock(lockFile);
      s.fx.spec('api').version = '1.1.0';
      s.fx.write();
      const revision = await s.fx.revisionId();
      s.agent.offer({
        id: revision,
        origin: 'directory',
        source: `directory ${s.fx.dir}`,
        reader: new DirectoryReader(s.fx.dir),
      });
      await until(() => s.agent.waiting()?.revision === revision, 20_000, 'the revision to wait for the lock');

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
        const callout = page.locator('[data-field="waiting"]');
        await callout.waitFor({ timeout: 15_000 });
        const text = ((await callout.textContent()) ?? '').replace(/\s+/g, ' ').trim();
        expect(text).toMatch(
          new RegExp(
            `^Commit ${revision.slice(0, 16).replace(/[.:]/g, '.')}.* waits: held: api holds its update lock \\(since .+\\)\\. What runs keeps running; it is applied the moment the lock is let go\\.$`,
          ),
        );
        expect(await callout.getAttribute('class')).toContain('tone-warn');

        letGo(holder);
        holder = undefined;
        await callout.waitFor({ state: 'detached', timeout: 20_000 });
        expect(s.agent.store.appliedRevision()?.id).toBe(revision);
      } finally {
        await context.close();
      }
      expect(problems).toEqual([]);
    });
  },
);
