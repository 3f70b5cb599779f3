// The agent under chaos: the real `keystone agent` (test/support/agent-harness.ts runs it as a child, so kill -9 is
// real) following the chaos repository over smart HTTP, reporting statuses as Git notes to the same server, with its
// HTTP API on a fixed loopback port. Knobs are turned down so that a cycle takes seconds: a 300 ms poll (and a nudge
// through POST /v1/sync after each push), a 1 s grace, short backoffs, and a healthy spell of 1 s so that the many
// crashes of a long run never add up to a crash loop.
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ownerTag } from '../../src/agent/orphan-sweep.js';
import { callAgentApi } from '../../test/support/agent-api.js';
import { AgentHarness, is, type AgentProcess } from '../../test/support/agent-harness.js';
import { ContainerHarness } from '../../test/support/container-harness.js';
import { freePorts } from '../../test/support/stack-fixture.js';
import { holdLock, letGo } from '../../test/support/lock-holder.js';
import { GAUGE, GAUGE_LOCK, type ChaosRepo } from './chaos-repo.js';

export const DEVICE = 'chaos-01';

/**
 * Issue 27 (SPEC §5): after a restart, the agent probes the instances it adopted before it says anything about them,
 * between these two log lines (src/agent/, "checking the health of adopted instances" with the components, then
 * "adopted instances checked" with which were healthy).
 */
export const ADOPTED_CHECKING = 'checking the health of adopted instances';
export const ADOPTED_CHECKED = 'adopted instances checked';
/** What an agent says when it cannot read back the revision it applied last (then it loads nothing, and checks nothing). */
export const CANNOT_RELOAD =
  'the revision applied last is no longer in the local clone: what was adopted runs on as it is until a valid revision comes';

export class ChaosAgent {
  readonly h: AgentHarness;
  /** `io.keystone.owner` of the agent's containers. */
  readonly tag: string;
  agent: AgentProcess | undefined;
  /** The log tail of the agent killed last: what it was doing when it died, for a failure report. */
  lastTail = '';
  /** Whether the agent killed last died inside the health check of the instances it adopted (between the two lines above). */
  lastKillInAdoptedWait = false;
  private apiPort = 0;

  constructor(
    private readonly repo: ChaosRepo,
    readonly withContainer: boolean,
  ) {
    // ContainerHarness also removes the agent's containers at the end; without an engine there are none.
    this.h = withContainer ? new ContainerHarness() : new AgentHarness();
    this.tag = ownerTag(this.h.stateDir);
  }

  async init(): Promise<void> {
    [this.apiPort] = (await freePorts(1)) as [number];
  }

  /** `env`: extra environment, e.g. KEYSTONE_CRASH_AT for a scenario that needs a kill at one exact point. */
  start(env?: Record<string, string>): AgentProcess {
    const { fx, url } = this.repo;
    this.agent = this.h.start({
      ...(env && { env }),
      repo: url,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: [
        '--ref',
        'main',
        '--poll',
        '300ms',
        '--device',
        DEVICE,
        '--status',
        'git-notes',
        '--listen',
        `127.0.0.1:${this.apiPort}`,
        '--grace',
        '1s',
        '--max-backoff',
        '500ms',
        '--healthy-spell',
        '1s',
        '--crash-loop-limit',
        '1000',
        // stack-fixture moves every signing time a second past the last: a fast run signs ahead of the clock.
        '--max-clock-skew',
        '24h',
      ],
    });
    return this.agent;
  }

  /** kill -9 of the agent alone; its components (own sessions) and containers (the engine's) live on. */
  async kill9(): Promise<void> {
    const a = this.agent;
    if (!a) return;
    await a.kill9();
    // Everything it wrote before it died, read to the end (the exit can be seen before the last lines are).
    const out = a.child.stdout;
    if (out && !out.closed) {
      let deadline: NodeJS.Timeout | undefined;
      await Promise.race([once(out, 'close'), new Promise((r) => (deadline = setTimeout(r, 2_000)))]).catch(
        () => undefined,
      );
      clearTimeout(deadline);
    }
    const checking = a.logs.findIndex((l) => l.msg === ADOPTED_CHECKING);
    this.lastKillInAdoptedWait = checking >= 0 && !a.logs.slice(checking).some((l) => l.msg === ADOPTED_CHECKED);
    this.lastTail = a.tail(30);
    // A long run starts a thousand agents: keep no dead agent's log lines.
    a.logs.length = 0;
    const i = this.h.agents.indexOf(a);
    if (i >= 0) this.h.agents.splice(i, 1);
    this.agent = undefined;
  }

  /**
   * Resolves true as soon as the running agent logs that it checks the health of the instances it adopted (kill it
   * then, and the kill lands inside that check: it lasts ~200 ms at least, for the components without a check, and a
   * sick gauge's whole 2 s start budget); false when it goes past its first apply (or resume) without such a line.
   */
  async adoptedCheckBegun(deadlineMs = 20_000): Promise<boolean> {
    const a = this.agent;
    if (!a) return false;
    const seen = await a
      .waitForLog(
        (l) => l.msg === ADOPTED_CHECKING || l.msg === ADOPTED_CHECKED || is.applyEnd(l) || l.msg === CANNOT_RELOAD,
        deadlineMs,
        0,
        'the health check of adopted instances',
      )
      .catch(() => undefined);
    return seen?.msg === ADOPTED_CHECKING;
  }

  private token(): string | undefined {
    const f = join(this.h.stateDir, 'api-token');
    return existsSync(f) ? readFileSync(f, 'utf8').trim() : undefined;
  }

  /** One API request; undefined when the agent does not answer (not up yet, or killed meanwhile). */
  async api(
    method: 'GET' | 'POST',
    path: string,
    timeoutMs = 10_000,
  ): Promise<{ status: number; body: unknown } | undefined> {
    const token = this.token();
    if (!token) return undefined;
    try {
      return await callAgentApi(this.apiPort, token, method, path, timeoutMs);
    } catch {
      return undefined;
    }
  }

  /** Someone holding gauge's update lock (SPEC §19), made if missing; undefined until released. */
  private gaugeLock: ChildProcess | undefined;

  /** Holds gauge's update lock (its work directory is made at its first start, before any cycle). */
  async holdGaugeLock(): Promise<void> {
    if (this.gaugeLock) return;
    const file = join(this.h.workDir(GAUGE), GAUGE_LOCK);
    mkdirSync(dirname(file), { recursive: true });
    if (!existsSync(file)) writeFileSync(file, '');
    this.gaugeLock = await holdLock(file);
  }

  get holdsGaugeLock(): boolean {
    return this.gaugeLock !== undefined;
  }

  releaseGaugeLock(): void {
    if (this.gaugeLock) letGo(this.gaugeLock);
    this.gaugeLock = undefined;
  }

  /** Look at the branch now (the poll would, within a second). */
  async nudge(): Promise<void> {
    await this.api('POST', '/v1/sync', 2_000);
  }

  async close(): Promise<void> {
    this.releaseGaugeLock();
    await this.h.cleanup();
  }
}
