// Issue 32 in the API (HTTP requests to an in-process agent with a real process): GET /v1/revision's `agent`
// carries `update` (SPEC §17) when the agent's `agentUpdate` hook has something to say, read at each request; in the
// 404 before any apply too; never when the hook says nothing or the agent has none.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import { startAgent, type Agent } from '../../src/agent/agent.js';
import type { AgentUpdateView } from '../../src/agent-update/agent-home.js';
import { agentView } from '../../src/api/agent-view.js';
import { buildServer, type ApiServer } from '../../src/api/build-server.js';
import { createLogger } from '../../src/log/logger.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

type Json = Record<string, unknown>;

const C = '3cae32fcfc872e15fd7a9c57934db48a970e6819';
const TRIAL: AgentUpdateView = { state: 'trial', version: '0.2.0', commit: C, since: '2026-12-05T07:55:00.000Z' };
const FAILED: AgentUpdateView = {
  state: 'failed',
  version: '0.3.0',
  commit: C,
  reason: 'the new agent exited 1 at start',
  since: '2026-12-05T07:58:00.000Z',
};

describe('agentView', () => {
  const ctx = (agentUpdate?: () => AgentUpdateView | undefined) => ({
    self: { pid: 7, version: '0.2.0' },
    startedAt: 0,
    agent: { health: () => ({}), ...(agentUpdate && { agentUpdate }) },
  });

  it('update only when the hook returns one', () => {
    expect(agentView(ctx(() => TRIAL))).toEqual({
      pid: 7,
      version: '0.2.0',
      startedAt: '1970-01-01T00:00:00.000Z',
      health: {},
      update: TRIAL,
    });
    expect(agentView(ctx(() => undefined))).not.toHaveProperty('update');
    expect(agentView(ctx())).not.toHaveProperty('update');
  });
});

describe('GET /v1/revision: agent.update', { timeout: 30_000 }, () => {
  let fx: StackFixture;
  let stateDir: string;
  let agent: Agent;
  let server: ApiServer;
  let plain: ApiServer;
  let update: AgentUpdateView | undefined;
  let reads = 0;
  const get = async (s: ApiServer) => {
    const r = await inject(s, { method: 'GET', url: '/v1/revision', headers: { authorization: 'Bearer t' } });
    return { status: r.statusCode, agent: r.json<Json>().agent as Json };
  };

  beforeAll(async () => {
    fx = await stackFixture({ signed: false, components: () => [sleeper('db')] });
    stateDir = mkdtempSync(join(tmpdir(), 'keystone-api-agent-update-'));
    agent = await startAgent({
      planFile: fx.plan,
      stateDir,
      trust: { unsigned: true },
      log: createLogger({ pretty: false, write: () => undefined }),
      runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
      probe: async () => ({ ok: true, detail: 'no health check', latencyMs: 0 }),
      concurrency: 2,
      graceMs: 2000,
    });
    const agentUpdate = () => {
      reads++;
      return update;
    };
    server = buildServer({ agent: { ...agent, agentUpdate }, token: 't', self: { pid: 4242, version: '0.2.0' } });
    plain = buildServer({ agent, token: 't', self: { pid: 4242, version: '0.2.0' } });
  });
  afterAll(async () => {
    await server?.close();
    await plain?.close();
    await agent?.close({ stopComponents: true });
    fx?.cleanup();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('before anything is applied, the 404 carries it', async () => {
    update = FAILED;
    const r = await get(server);
    expect(r.status).toBe(404);
    expect(r.agent).toMatchObject({ pid: 4242, version: '0.2.0', update: FAILED });
  });

  it('read at each request: a trial, then nothing once it reported success', async () => {
    agent.offer({ id: 'dir:good', origin: 'directory', source: 'test', reader: new DirectoryReader(fx.dir) });
    await agent.idle();
    update = TRIAL;
    const before = reads;
    const r = await get(server);
    expect(r.status).toBe(200);
    expect(r.agent.update).toEqual(TRIAL);
    update = undefined;
    const after = await get(server);
    expect(after.status).toBe(200);
    expect(after.agent).not.toHaveProperty('update');
    expect(reads - before).toBe(2);
  });

  it('an agent without the hook never has it', async () => {
    update = FAILED;
    const r = await get(plain);
    expect(r.status).toBe(200);
    expect(r.agent).not.toHaveProperty('update');
    expect(r.agent).toMatchObject({ pid: 4242, version: '0.2.0' });
  });
});
