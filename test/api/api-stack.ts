// An in-process agent on a stack fixture, with the API built on it: the real engine, real processes (the stand-ins of
// `artifacts/` or plain shells), the real token file. Tests inject requests, or listen on loopback and a Unix socket.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent, type Agent } from '../../src/agent/agent.js';
import { ownerTag } from '../../src/agent/orphan-sweep.js';
import type { RestartLimits } from '../../src/core/restart-policy.js';
import { ensureApiToken } from '../../src/api/api-token.js';
import type { ApiAgent, ApiDeps } from '../../src/api/api-deps.js';
import { buildServer, type ApiServer } from '../../src/api/build-server.js';
import { listenApi, type ApiListeners } from '../../src/api/listen-api.js';
import { createLogger } from '../../src/log/logger.js';
import { artifactInstaller } from '../../src/runtime/artifact-installer.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { isSameProcess, readProcStat } from '../../src/runtime/proc-identity.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import type { RepoReader } from '../../src/source/repo-reader.js';
import { processesUnder } from '../support/agent-harness.js';
import { stackFixture, type ComponentSpec, type StackFixture, type StackPorts } from '../support/stack-fixture.js';
import { inject, type InjectResponse } from '../support/http-inject.js';

export interface ApiStack {
  fx: StackFixture;
  agent: Agent;
  server: ApiServer;
  token: string;
  /** `{ authorization: 'Bearer <token>' }`: every /v1 route needs it, reads too. */
  auth(): { authorization: string };
  /** GET with the token, over HTTP (test/support/http-inject.ts). */
  get(url: string): Promise<InjectResponse>;
  stateDir: string;
  /** The agent's JSON log lines so far. */
  lines: Array<Record<string, unknown>>;
  /** Set by listen(). */
  listeners?: ApiListeners;
  /** Listens on 127.0.0.1 (a free port) and, if given, a Unix socket. */
  listen(socketPath?: string): Promise<ApiListeners>;
  /** name → live pid of every component with a process, checked against /proc (pid and start time). */
  livePids(): Record<string, number>;
  /** Offers the fixture's current content as a revision and waits until it is applied. */
  apply(): Promise<void>;
  close(): Promise<void>;
}

export async function apiStack(
  opts: {
    components?: (ports: StackPorts) => ComponentSpec[];
    restartLimits?: RestartLimits;
    following?: 'git' | 'directory';
    /** The server's connection limits, clock and refusal log (tests of finding 8). */
    api?: Pick<ApiDeps, 'limits' | 'now' | 'refusalLog' | 'dashboard'>;
    /** GET /v1/revision's `agent.update` (SPEC §17), as the agent's composition wires it. */
    agentUpdate?: ApiAgent['agentUpdate'];
  } = {},
): Promise<ApiStack> {
  const fx = await stackFixture({ signed: false, ...(opts.components && { components: opts.components }) });
  const stateDir = mkdtempSync(join(tmpdir(), 'keystone-api-state-'));
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  let reader: RepoReader | undefined;
  const tag = ownerTag(stateDir);
  const runtime = new ProcessRuntime({
    ownerTag: tag,
    installArtifacts: artifactInstaller({
      reader: () => reader!,
      cacheDir: join(stateDir, 'cache'),
      maxBytes: 64 * 1024 * 1024,
    }),
  });
  const agent = await startAgent({
    planFile: fx.plan,
    stateDir,
    trust: { unsigned: true },
    log: logger,
    runtimes: { process: runtime },
    probe: async (c, paths, _timeoutMs, signal) => {
      const bound = await runtime.healthProbe(c, paths);
      return bound ? bound(signal) : { ok: true, detail: 'no health check', latencyMs: 0 };
    },
    concurrency: 4,
    graceMs: 2000,
    ownerTag: tag,
    useReader: (r) => (reader = r),
    ...(opts.following && { following: opts.following }),
    ...(opts.restartLimits && { restartLimits: opts.restartLimits }),
  });
  const { token } = ensureApiToken(stateDir);
  const server = buildServer({
    agent: opts.agentUpdate ? { ...agent, agentUpdate: opts.agentUpdate } : agent,
    token,
    log: logger,
    ...opts.api,
  });

  const stack: ApiStack = {
    fx,
    agent,
    server,
    token,
    auth: () => ({ authorization: `Bearer ${token}` }),
    get: (url) => inject(server, { method: 'GET', url, headers: { authorization: `Bearer ${token}` } }),
    stateDir,
    lines,
    async listen(socketPath) {
      stack.listeners = await listenApi(server, {
        tcp: { host: '127.0.0.1', port: 0 },
        ...(socketPath !== undefined && { socketPath }),
      });
      return stack.listeners;
    },
    livePids() {
      const out: Record<string, number> = {};
      for (const c of agent.store.components()) {
        if (c.instance?.kind !== 'process' || !isSameProcess(c.instance.pid, c.instance.startTime)) continue;
        out[c.name] = c.instance.pid;
      }
      return out;
    },
    async apply() {
      agent.offer({
        id: await fx.revisionId(),
        origin: 'directory',
        source: `directory ${fx.dir}`,
        reader: new DirectoryReader(fx.dir),
      });
      await agent.idle();
    },
    async close() {
      if (stack.listeners) await stack.listeners.close();
      else await server.close();
      await agent.close({ stopComponents: true });
      // Whatever a failed test left behind (a probe, a process the engine lost track of) dies with the test.
      const ownGroup = readProcStat(process.pid)?.pgrp;
      for (const p of processesUnder(stateDir)) {
        try {
          process.kill(p.stat.pgrp === ownGroup ? p.pid : -p.stat.pgrp, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      fx.cleanup();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
  await stack.apply();
  return stack;
}

/** Polls `cond` every 20 ms until it holds; throws with `what` at the deadline. */
export async function until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
