// An instance adopted after a restart is not assumed healthy (SPEC §5): until its health check has run — at the first
// revision loaded — the API says its health is `unknown`, not `healthy`. When the first revision offered after the
// restart is refused, no check runs, and the API goes on saying `unknown` rather than the `running` of the old record
// as healthy (issue 27's review: status said healthy for an instance whose check failed).
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentHarness, is } from '../../support/agent-harness.js';
import { runCtl } from '../../support/cli-run.js';
import { freePorts, stackFixture } from '../../support/stack-fixture.js';

describe('an adopted instance before its health check', { timeout: 90_000 }, () => {
  it('shows health unknown while no revision has been loaded since the restart (the first one refused)', async () => {
    const [port, api] = (await freePorts(2)) as [number, number];
    const listener = createServer((s) => s.destroy()).listen(port, '127.0.0.1');
    const fx = await stackFixture({
      signed: false,
      components: () => [
        {
          name: 'a',
          version: '1.0.0',
          command: 'sleep',
          args: ['1000'],
          health: { check: `tcp://127.0.0.1:${port}`, interval: '200ms', timeout: '150ms', failureThreshold: 5 },
        },
      ],
    });
    const h = new AgentHarness();
    try {
      const start = () =>
        h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--listen', `127.0.0.1:${api}`] });
      const first = start();
      await first.waitForLog(is.applyEnd, 20_000);
      const health = async () => {
        const r = await runCtl(['status', '--json', '--agent', `127.0.0.1:${api}`, '--state-dir', h.stateDir], fx.dir);
        return (
          (JSON.parse(r.stdout) as { components: Array<{ name: string; health: string }> }).components.find(
            (c) => c.name === 'a',
          ) ?? {}
        ).health;
      };
      expect(await health()).toBe('healthy');
      await first.stop();
      await new Promise<void>((r) => listener.close(() => r())); // its check fails from now on
      appendFileSync(join(fx.dir, fx.plan), '\n[[components]]\nname = \n'); // and the directory is invalid meanwhile
      const second = start();
      await second.waitForLog(is.msgIncludes('revision refused'), 20_000);
      await second.waitForLog(is.msg('HTTP API listening'), 20_000);
      expect(second.lines(is.about('a', 'adopted running instance'))).toHaveLength(1);
      expect(await health()).toBe('unknown');
    } finally {
      await h.cleanup();
      fx.cleanup();
    }
  });
});
