// The rollout walkthrough of docs/rollouts.md, run as written (examples/rollout/walkthrough.sh): six real agents in three waves
// over smart HTTP; a good commit walks the waves, a bad one halts at the canary, its revert goes everywhere at once.
// The script waits on `fleet status --json`; this test checks what it printed at each step, and the devices' logs.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { freePorts } from '../support/stack-fixture.js';
import { processesMentioning } from '../support/leftover-processes.js';

const run = promisify(execFile);
const DEVICES = ['gw-1', 'gw-2', 'sensor-1', 'gw-3', 'sensor-2', 'sensor-3'];

const work = mkdtempSync(join(tmpdir(), 'keystone-rollout-walk-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const logOf = (d: string) =>
  readFileSync(join(work, 'w', `${d}.log`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg?: string; revision?: string; wave?: string });

describe('the rollout walkthrough', { timeout: 300_000 }, () => {
  it('walks a good commit through the waves, halts a bad one at the canary, and reverts everywhere at once', async () => {
    const [port] = (await freePorts(1)) as [number];
    const { stdout } = await run(
      'bash',
      [join(PROJECT_ROOT, 'examples', 'rollout', 'walkthrough.sh'), join(work, 'w')],
      {
        env: { ...process.env, KEYSTONE_WALKTHROUGH_PORT: String(port) },
        timeout: 280_000,
        maxBuffer: 8 * 1024 * 1024,
      },
    ).catch((e: { stdout?: string; stderr?: string; message: string }) => {
      const logs = DEVICES.map((d) => {
        try {
          return `--- ${d}.log\n${readFileSync(join(work, 'w', `${d}.log`), 'utf8')
            .split('\n')
            .slice(-6)
            .join('\n')}`;
        } catch {
          return `--- ${d}.log: none`;
        }
      });
      throw new Error(`${e.message}\n--- stdout\n${e.stdout ?? ''}\n--- stderr\n${e.stderr ?? ''}\n${logs.join('\n')}`);
    });
    const steps = Object.fromEntries(
      stdout
        .split(/^-- /m)
        .slice(1)
        .map((s) => [s.split('\n', 1)[0]!, s]),
    );
    const canaryDone = 'the canary applied it; early waits for its bake';
    expect(steps[canaryDone]).toMatch(/^canary\s+named: gw-1\s+1\s+1\s+0\s+0\s+0\s/m);
    // Printed right after the canary's success: early waits, unless the bake ran out while the view was read.
    expect(steps[canaryDone]).toMatch(/^early\s.*\s(waiting for canary|baking|applying)$/m);
    expect(steps["early applied it; everyone waits for early's bake"]).toMatch(
      /^early\s+named: ring=early\s+2\s+2\s+0\s+0\s+0\s/m,
    );
    expect(steps['everyone applied it']).toMatch(/^everyone\s+100 %\s+3\s+3\s+0\s+0\s+0\s/m);
    const halted = steps['halted: no device outside the canary applies it']!;
    expect(halted).toContain('halted at canary: 1 of 1 failed');
    expect(halted).toMatch(/^early\s.*\s0\s+0\s+0\s+2\s.*halted$/m);
    // The devices' own logs: gw-1 opened its gate at once; no one else ever applied 1.2.0; the revert held no one.
    const bad = logOf('gw-1').find(
      (l) => l.msg?.startsWith('apply failed') === true || l.msg?.startsWith('apply failed:') === true,
    );
    expect(bad).toBeDefined();
    // The bad commit as the canary names it: whether gw-2 has also logged its halt by the time the script reverts
    // depends on where its poll falls (its report may still say it waits for the canary).
    const badRevision = bad?.revision;
    expect(badRevision).toMatch(/^[0-9a-f]{40}$/);
    for (const d of DEVICES.slice(1))
      expect(logOf(d).filter((l) => l.revision === badRevision && l.msg === 'rollout gate open')).toEqual([]);
    const revertStep = steps['the revert, everywhere at once']!;
    expect(revertStep).toMatch(/^everyone\s+100 %\s+3\s+3\s/m);
    expect(
      logOf('sensor-3').filter(
        (l) =>
          l.msg === 'rollout gate open' && /ran successfully before/.test(String((l as { reason?: string }).reason)),
      ),
    ).not.toEqual([]);
    expect(logOf('gw-3')[0]).toBeDefined();
    expect(logOf('gw-3').find((l) => l.msg === 'this device in the fleet')).toMatchObject({ wave: 'everyone' });
    expect(processesMentioning(join(work, 'w'))).toEqual([]);
  });
});
