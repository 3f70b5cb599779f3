// The in-process harness of the agent-update loop tests (agent-update-loop.test.ts's, shared by the refusal and wave
// tests): real agents on one state directory, a real component, real packages, the package's agent-rollback run by
// sh; systemctl is recorded (its restart is done by closing one agent and starting the next on the same state).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentHome } from '../../src/agent-update/agent-home.js';
import { AgentUpdater } from '../../src/agent-update/agent-updater.js';
import { instancesOf } from '../../src/agent-update/agent-update-setup.js';
import { startAgent, type Agent } from '../../src/agent/agent.js';
import type { TrustSetting } from '../../src/agent/agent-types.js';
import { commitReports } from '../../src/agent/commit-reporting.js';
import { createLogger } from '../../src/log/logger.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import type { CommitStatus } from '../../src/report/commit-status.js';
import { ARCH } from './fake-deb.js';

export const PROJECT = join(import.meta.dirname, '..', '..');

export interface AgentTable {
  version: string;
  uri: string;
  sha256: string;
  allowDowngrade?: boolean;
}

/** Throwaway directories and agents, closed and removed by cleanup() (afterEach). */
export class LoopHarness {
  readonly dirs: string[] = [];
  readonly agents: Agent[] = [];

  temp(prefix: string): string {
    const d = mkdtempSync(join(tmpdir(), prefix));
    this.dirs.push(d);
    return d;
  }

  async cleanup(): Promise<void> {
    for (const a of this.agents.splice(0)) await a.close({ stopComponents: true });
    for (const d of this.dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }

  /**
   * A fleet repository: one component `svc` (its recipe at `svcVersion`), a second one `aux` when asked (a plan
   * change that leaves svc alone), `[agent]` and a fleet.toml tail when given.
   */
  repo(o: { agent?: AgentTable; svcVersion?: string; aux?: boolean; fleetTail?: string } = {}): DirectoryReader {
    const dir = this.temp('ks-update-repo-');
    mkdirSync(join(dir, 'recipes'));
    mkdirSync(join(dir, 'plans'));
    writeFileSync(
      join(dir, 'recipes', 'svc.toml'),
      `[metadata]\nname = "com.test.svc"\nversion = "${o.svcVersion ?? '1.0.0'}"\n\n[lifecycle.run.exec]\ncommand = "sleep"\nargs = ["1000"]\n`,
    );
    writeFileSync(join(dir, 'plans', 'p.toml'), `[[components]]\nname = "svc"\nrecipe = "recipes/svc.toml"\n`);
    if (o.aux) {
      writeFileSync(
        join(dir, 'recipes', 'aux.toml'),
        `[metadata]\nname = "com.test.aux"\nversion = "1.0.0"\n\n[lifecycle.run.exec]\ncommand = "sleep"\nargs = ["1000"]\n`,
      );
      writeFileSync(
        join(dir, 'plans', 'p.toml'),
        `[[components]]\nname = "svc"\nrecipe = "recipes/svc.toml"\n\n[[components]]\nname = "aux"\nrecipe = "recipes/aux.toml"\n`,
      );
    }
    let fleet = `[[targets]]\nname = "all"\nselector = {}\nplan = "plans/p.toml"\n${o.fleetTail ?? ''}`;
    const a = o.agent;
    if (a)
      fleet = `[agent]\nversion = "${a.version}"\n${a.allowDowngrade ? 'allow_downgrade = true\n' : ''}[agent.packages.${ARCH}]\nuri = "${a.uri}"\nsha256 = "${a.sha256}"\n\n${fleet}`;
    writeFileSync(join(dir, 'fleet.toml'), fleet);
    return new DirectoryReader(dir);
  }

  /**
   * An agent of `version` on `stateDir` with its updater on `home` (systemctl recorded in `calls`, agent-rollback run
   * by sh), and the commit statuses it would send (commit-reporting.ts, through a recording outbox) in `sent`.
   */
  async start(o: {
    version: string;
    stateDir: string;
    home: AgentHome;
    trust: TrustSetting;
    calls: string[][];
    device?: string;
    extra?: Partial<Parameters<typeof startAgent>[0]>;
  }): Promise<{ a: Agent; updater: AgentUpdater; sent: CommitStatus[]; lines: Array<Record<string, unknown>> }> {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({
      pretty: false,
      write: (l) => void lines.push(JSON.parse(l) as Record<string, unknown>),
    });
    const box: { agent?: Agent } = {};
    const updater = new AgentUpdater({
      home: o.home,
      version: o.version,
      arch: ARCH,
      unit: 'keystone.service',
      packageLib: join(PROJECT, 'packaging', 'launchers'),
      node: process.execPath,
      cacheDir: join(o.stateDir, 'cache'),
      instances: () => instancesOf(box.agent!.store),
      snapshot: (f) => box.agent!.store.snapshotTo(f),
      log,
      now: Date.now,
      exec: async (file, args, env) => {
        o.calls.push([file, ...args]);
        if (file === '/bin/sh') execFileSync(file, args, { env: { ...env, PATH: process.env.PATH } });
      },
    });
    const a = await startAgent({
      fleet: { device: o.device ?? 'd1', labels: {} },
      stateDir: o.stateDir,
      trust: o.trust,
      log,
      runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
      probe: async () => ({ ok: true, detail: 'no check', latencyMs: 0 }),
      concurrency: 2,
      graceMs: 2000,
      agentUpdate: updater,
      ...o.extra,
    });
    box.agent = a;
    this.agents.push(a);
    const sent: CommitStatus[] = [];
    a.outcomes.reportTo(
      commitReports({
        outbox: { enqueue: (s) => (sent.push(s), [sent.length]) },
        context: `keystone/${o.device ?? 'd1'}`,
        now: Date.now,
        rolloutKeep: () => a.rolloutKeep(),
      }),
    );
    return { a, updater, sent, lines };
  }

  /** Closes `a` leaving its components running (the unit's restart with KillMode=process). */
  async stop(a: Agent): Promise<void> {
    await a.close({ stopComponents: false });
    this.agents.splice(this.agents.indexOf(a), 1);
  }
}
