// Issue 32 in `keystonectl status`: GET /v1/revision's `agent.update` (SPEC §17), a version on trial, one put back,
// or one this agent cannot update itself to, as one line under the agent's own; `--json` carries it as the agent
// sent it. The rendering pure, then the command against a canned agent on loopback.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentUpdateView } from '../../src/agent-update/agent-home.js';
import { agentUpdateLine, renderStatus } from '../../src/cli/render/status-table.js';
import { runCtl } from '../support/cli-run.js';
import { apiError, CannedAgent } from './agent-commands/canned-agent.js';

const NOW = Date.parse('2026-12-05T08:00:00Z');
const C = '3cae32fcfc872e15fd7a9c57934db48a970e6819';
const agent = { pid: 23401, version: '0.2.0', startedAt: '2026-12-05T07:55:00.000Z', health: {} };
const TRIAL: AgentUpdateView = { state: 'trial', version: '0.2.0', commit: C, since: '2026-12-05T07:55:00.000Z' };
const FAILED: AgentUpdateView = {
  state: 'failed',
  version: '0.3.0',
  commit: C,
  reason: 'the new agent exited 1 at start',
  since: '2026-12-05T07:58:00.000Z',
};
const UNSUPPORTED: AgentUpdateView = {
  state: 'unsupported',
  version: '0.2.0',
  reason: 'not run from the keystone package under systemd',
};

describe('the agent update line', () => {
  it('each state in its words; the commit shortened to 12', () => {
    expect(agentUpdateLine({ ...agent, update: TRIAL })).toBe(
      'agent update: 0.2.0 on trial since 2026-12-05 07:55:00Z until it reports success for 3cae32fcfc87',
    );
    expect(agentUpdateLine({ ...agent, update: { ...TRIAL, next: '0.3.0', nextCommit: 'd'.repeat(40) } })).toBe(
      'agent update: 0.2.0 on trial since 2026-12-05 07:55:00Z until it reports success for 3cae32fcfc87; 0.3.0 (commit dddddddddddd) waits for it',
    );
    expect(agentUpdateLine({ ...agent, update: FAILED })).toBe(
      'agent update: 0.3.0 failed and was put back (commit 3cae32fcfc87): the new agent exited 1 at start',
    );
    expect(agentUpdateLine({ ...agent, update: UNSUPPORTED })).toBe(
      'agent update: the fleet names 0.2.0; this agent cannot update itself (not run from the keystone package under systemd)',
    );
  });

  it('what a state leaves out is left out of its line; a state it does not know is said as it comes', () => {
    expect(agentUpdateLine({ update: { state: 'trial', version: '0.2.0' } })).toBe(
      'agent update: 0.2.0 on trial until it reports success',
    );
    expect(agentUpdateLine({ update: { state: 'trial', version: '0.2.0', next: '0.3.0' } })).toBe(
      'agent update: 0.2.0 on trial until it reports success; 0.3.0 waits for it',
    );
    expect(agentUpdateLine({ update: { state: 'failed', version: '0.3.0' } })).toBe(
      'agent update: 0.3.0 failed and was put back',
    );
    expect(agentUpdateLine({ update: { state: 'unsupported', version: '0.2.0' } })).toBe(
      'agent update: the fleet names 0.2.0; this agent cannot update itself',
    );
    expect(agentUpdateLine({ update: { state: 'staging', version: '0.4.0', commit: C } })).toBe(
      'agent update: staging 0.4.0 (commit 3cae32fcfc87)',
    );
  });

  it('none: no line (an agent with nothing to say, or from before issue 32)', () => {
    expect(agentUpdateLine(agent)).toBeUndefined();
    expect(agentUpdateLine({ ...agent, update: null })).toBeUndefined();
    expect(agentUpdateLine(undefined)).toBeUndefined();
    expect(renderStatus([], undefined, NOW, undefined, { agent })).toBe(
      'agent pid 23401  keystone 0.2.0  started 5m ago\nrevision: none applied yet\nno components\n',
    );
  });

  it("under the agent's line (which names its version), above the revision", () => {
    const lines = renderStatus([], { id: C, planFile: 'plans/p.toml' }, NOW, undefined, {
      agent: { ...agent, update: FAILED },
    }).split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'agent pid 23401  keystone 0.2.0  started 5m ago',
      'agent update: 0.3.0 failed and was put back (commit 3cae32fcfc87): the new agent exited 1 at start',
      `revision ${C}  plan plans/p.toml`,
    ]);
  });
});

describe('keystonectl status against an agent with an update to tell of', () => {
  let canned: CannedAgent;
  let stateDir: string;
  beforeEach(async () => {
    canned = await new CannedAgent().listen();
    stateDir = mkdtempSync(join(tmpdir(), 'keystonectl-agent-update-'));
  });
  afterEach(async () => {
    await canned.close();
    rmSync(stateDir, { recursive: true, force: true });
  });
  const ctl = (args: string[]) =>
    runCtl([...args, '--agent', canned.url, '--state-dir', stateDir], '/', { now: () => NOW });
  const REVISION = {
    id: C,
    source: 'git',
    planFile: 'plans/edge.toml',
    unsigned: false,
    signedAt: null,
    appliedAt: '2026-12-05T07:56:00.000Z',
  };

  it('human: the trial under the agent line', async () => {
    canned
      .on('GET /v1/components', [])
      .on('GET /v1/revision', { ...REVISION, agent: { ...agent, update: TRIAL }, rejected: null });
    const r = await ctl(['status']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').slice(0, 3)).toEqual([
      'agent pid 23401  keystone 0.2.0  started 5m ago',
      'agent update: 0.2.0 on trial since 2026-12-05 07:55:00Z until it reports success for 3cae32fcfc87',
      `revision ${C}  plan plans/edge.toml  applied 4m ago`,
    ]);
  });

  it('before any revision is applied (the 404 carries the agent): the failed update is still said', async () => {
    canned.on('GET /v1/components', []).on(
      'GET /v1/revision',
      apiError(404, 'KS_NO_REVISION', 'no revision has been applied on this device yet', {
        agent: { ...agent, update: FAILED },
        rejected: null,
      }),
    );
    const r = await ctl(['status']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      '\nagent update: 0.3.0 failed and was put back (commit 3cae32fcfc87): the new agent exited 1 at start\nrevision: none applied yet\n',
    );
  });

  it('--json: agent.update as the agent sent it', async () => {
    canned
      .on('GET /v1/components', [])
      .on('GET /v1/revision', { ...REVISION, agent: { ...agent, update: UNSUPPORTED }, rejected: null });
    const r = await ctl(['status', '--json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as { agent: { update: unknown }; revision: { agent: { update: unknown } } };
    expect(j.agent.update).toEqual(UNSUPPORTED);
    expect(j.revision.agent.update).toEqual(UNSUPPORTED);
  });
});
