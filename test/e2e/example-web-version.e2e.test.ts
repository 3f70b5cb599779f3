// Issue 17: the README's bump of the example's api to 1.5.0 (one sed on `^version = "1.4.0"`) must show on the web
// page, which asks the api for its version on every request. The api stand-in reports what its recipe passes it: that
// value is now the recipe's `[config] version`, a line the same sed changes, instead of a copy in `args` it did not.
// The real agent runs the example's own recipes and stand-ins (moved to free ports, so no test collides on them).
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { freePorts } from '../support/stack-fixture.js';

/** The README's line, verbatim. */
const BUMP = 's/^version = "1.4.0"/version = "1.5.0"/';

describe("the example's web page after the README's api bump", { timeout: 120_000 }, () => {
  let dir: string;
  let h: AgentHarness;
  let agent: AgentProcess;
  let web: string;

  /** The page's one line about the api, as a visitor sees it. */
  const page = async () => /<p id="api">([^<]*)<\/p>/.exec(await (await fetch(web)).text())?.[1];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keystone-example-web-'));
    // The components run as nobody when the tests run as root: they must reach the copy.
    chmodSync(dir, 0o755);
    for (const d of ['recipes', 'plans', 'artifacts']) cpSync(join(PROJECT_ROOT, d), join(dir, d), { recursive: true });
    const [influxdb, api, webPort] = (await freePorts(3)) as [number, number, number];
    for (const f of readdirSync(join(dir, 'recipes'))) {
      const path = join(dir, 'recipes', f);
      writeFileSync(
        path,
        readFileSync(path, 'utf8')
          .replaceAll('18086', String(influxdb))
          .replaceAll('18087', String(api))
          .replaceAll('18088', String(webPort)),
      );
    }
    web = `http://127.0.0.1:${webPort}/`;
    h = new AgentHarness();
    agent = h.start({ dir, plan: 'plans/edge-processes.toml', trustArgs: ['--allow-unsigned'] });
    await agent.waitForLog(is.msg('all components running'), 60_000, 0, 'the example stack');
  });
  afterAll(async () => {
    await h?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows 1.4.0, and 1.5.0 once the bumped api runs', async () => {
    expect(await page()).toBe('API com.acme.api 1.4.0 answers; its database is up.');
    const mark = agent.mark();
    execFileSync('sed', ['-i', BUMP, 'recipes/com.acme.api.toml'], { cwd: dir });
    const plan = await agent.waitForLog(is.msg('reconcile plan'), 30_000, mark, 'the reconcile of the bump');
    expect({ stop: plan.stop_order, start: plan.start_order, untouched: plan.no_touch }).toEqual({
      stop: ['web', 'api'],
      start: ['api', 'web'],
      untouched: ['influxdb', 'telemetry'],
    });
    await agent.waitForLog(is.msg('all components running'), 60_000, mark, 'the bumped stack');
    expect(h.component('api')?.version).toBe('1.5.0');
    expect(await page()).toBe('API com.acme.api 1.5.0 answers; its database is up.');
  });
});
