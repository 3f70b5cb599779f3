// The fleet walkthrough of docs/fleets.md, run as written (examples/fleet/walkthrough.sh): three real agents on two targets
// from one repository over smart HTTP, one push, the fleet view, and a pull request's dry run for both targets.
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

const work = mkdtempSync(join(tmpdir(), 'keystone-walkthrough-'));
// Traversable, as a user's working directory is: the components run as nobody under it.
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the fleet walkthrough', { timeout: 240_000 }, () => {
  it('deploys to three devices on two targets, shows them per target, and dry-runs a pull request for both', async () => {
    const [port] = (await freePorts(1)) as [number];
    const { stdout } = await run('bash', [join(PROJECT_ROOT, 'examples', 'fleet', 'walkthrough.sh'), join(work, 'w')], {
      env: { ...process.env, KEYSTONE_WALKTHROUGH_PORT: String(port) },
      timeout: 220_000,
      maxBuffer: 8 * 1024 * 1024,
    }).catch((e: { stdout?: string; stderr?: string; message: string }) => {
      // What the script printed, and the devices' last log lines: the failure must say where it stopped.
      const logs = ['gw-1', 'sensor-1', 'sensor-2'].map((d) => {
        try {
          return `--- ${d}.log\n${readFileSync(join(work, 'w', `${d}.log`), 'utf8')
            .split('\n')
            .slice(-8)
            .join('\n')}`;
        } catch {
          return `--- ${d}.log: none`;
        }
      });
      throw new Error(`${e.message}\n--- stdout\n${e.stdout ?? ''}\n--- stderr\n${e.stderr ?? ''}\n${logs.join('\n')}`);
    });
    const [, , , first, dry, last] = stdout.split(/^== .*$/m);
    expect(first).toMatch(/^gateways\s+plans\/gateway\.toml\s+1\s+1\s/m);
    expect(first).toMatch(/^sensors\s+plans\/sensor\.toml\s+2\s+2\s/m);
    for (const d of ['gw-1', 'sensor-1', 'sensor-2'])
      expect(first).toMatch(new RegExp(`^${d}\\s+(gateways|sensors)\\s+success`, 'm'));
    // Both targets restart the heartbeat; only the gateway's uplink is untouched.
    expect(dry).toContain('gateways');
    expect(dry).toContain('sensors');
    expect(dry).toContain('1.1.0');
    expect(last).toMatch(/^gateways\s+plans\/gateway\.toml\s+1\s+1\s/m);
    expect(last).toMatch(/^sensors\s+plans\/sensor\.toml\s+2\s+2\s/m);
    // The script stops what it started: no agent, server or component is left behind.
    expect(processesMentioning(join(work, 'w'))).toEqual([]);
  });
});
