// The agent's self-update walkthrough (SPEC §17) run as written: examples/agent-update/walkthrough.sh --json builds
// keystone 0.1.0, 0.2.0, a broken 0.3.0 and a hanging 0.3.1, installs 0.1.0 in a Debian 12 container booting systemd,
// rolls 0.2.0 out through a signed repository the device follows, then 0.3.0 (put back by the launcher at its fourth
// start), then 0.3.1 with a 20 s deadline (put back by the deadline's timer, keystone-agent-deadline), and ends with one
// JSON line of what it saw. Minutes (three package builds, a container, three handovers, two rollbacks), and it needs
// the machine's two cores to itself: `npm test` leaves it out; `npm run test:agent-update` runs it (a step of .ci/run).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

const r = needs('docker', 'debootstrap', 'dpkg-deb', 'root');

/** The Debian image (debootstrap, the first time: minutes) and three package builds, then the walkthrough's steps. */
const WALKTHROUGH_TIMEOUT_MS = 40 * 60_000;

/** The walkthrough's JSON line: the eight keys issue 32 names, then what it adds. */
interface WalkthroughResult {
  versionBefore: string;
  versionAfter: string;
  componentPidsBefore: Record<string, number>;
  componentPidsAfter: Record<string, number>;
  versionAfterBroken: string;
  /** The state of the device's report on the broken commit, read from the note it pushed to its reports repository. */
  brokenReport: string;
  systemd: boolean;
  package: string;
  componentPidsAfterBroken: Record<string, number>;
  /** Why 0.3.0 was put back (the agent home's `failed`). */
  brokenReason: string;
  /** The `agent=` field of that report: the version that sent it. */
  brokenReportAgent: string | null;
  versionAfterDeadline: string;
  componentPidsAfterDeadline: Record<string, number>;
  deadlineReport: string;
  deadlineReportAgent: string | null;
  deadlineReportDescription: string;
  deadlineReason: string;
  /** How often the hanging 0.3.1 started (its line in keystone.service's journal). */
  deadlineTrialStarts: number;
  /** `keystone-agent-deadline` when that unit's journal says it put 0.3.1 back. */
  deadlineRollbackBy: string;
}

/** Runs the walkthrough with --json: its last stdout line, parsed; its steps (stderr) in the error when it fails. */
function walkthrough(): Promise<WalkthroughResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(PROJECT_ROOT, 'examples', 'agent-update', 'walkthrough.sh'), '--json'], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (process.env.KEYSTONE_WALKTHROUGH_VERBOSE === '1') process.stderr.write(d);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const last = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0)
        return reject(
          new Error(`examples/agent-update/walkthrough.sh --json exited ${code}:\n${stderr.slice(-12_000)}`),
        );
      try {
        resolve(JSON.parse(last) as WalkthroughResult);
      } catch {
        reject(
          new Error(
            `examples/agent-update/walkthrough.sh --json printed no JSON line last (stdout: ${JSON.stringify(stdout.slice(-2000))}):\n${stderr.slice(-6000)}`,
          ),
        );
      }
    });
  });
}

describe.skipIf(r.skip)(
  r.title(
    'examples/agent-update/walkthrough.sh: the agent updates itself under systemd, and a version that does not work is put back',
  ),
  () => {
    it(
      '0.1.0 → 0.2.0 through the repository without restarting a component; 0.3.0, which exits at start, and 0.3.1, which hangs past its deadline, are rolled back to 0.2.0 and reported failure',
      async () => {
        const w = await walkthrough();
        expect(w.systemd).toBe(true);
        expect(w.versionBefore).toBe('0.1.0');
        expect(w.versionAfter).toBe('0.2.0');
        expect(w.package).toMatch(/^keystone_0\.2\.0_(amd64|arm64|armhf)\.deb$/);
        expect(Object.keys(w.componentPidsBefore).sort()).toEqual(['api', 'influxdb', 'telemetry', 'web']);
        // The new agent adopted every component: not one was restarted by the handover.
        expect(w.componentPidsAfter).toEqual(w.componentPidsBefore);
        expect(w.versionAfterBroken).toBe('0.2.0');
        // As the device reported it (its note on the commit), by the version put back.
        expect(w.brokenReport).toBe('failure');
        expect(w.brokenReportAgent).toBe('0.2.0');
        expect(w.brokenReason).toMatch(/did not come up/);
        // Nor by the rollback.
        expect(w.componentPidsAfterBroken).toEqual(w.componentPidsBefore);
        // 0.3.1 started once and stayed up without reporting: the deadline's timer, not the start count, put 0.2.0 back.
        expect(w.deadlineTrialStarts).toBe(1);
        expect(w.deadlineRollbackBy).toBe('keystone-agent-deadline');
        expect(w.versionAfterDeadline).toBe('0.2.0');
        expect(w.componentPidsAfterDeadline).toEqual(w.componentPidsBefore);
        expect(w.deadlineReason).toBe('the new agent did not report success within 20s');
        expect(w.deadlineReport).toBe('failure');
        expect(w.deadlineReportAgent).toBe('0.2.0');
        expect(w.deadlineReportDescription).toMatch(
          /KS_AGENT_UPDATE_FAILED.*0\.3\.1.*did not report success within 20s/,
        );
      },
      WALKTHROUGH_TIMEOUT_MS,
    );
  },
);
