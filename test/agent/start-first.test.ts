// `update_strategy = "start-first"` (issue 7's zero-downtime roll) through the real engine with real processes: the new
// instance starts while the old one still runs, the old one goes only once the new one is healthy, and a new one that
// never gets healthy is removed while the old one keeps serving and the apply fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEventMap } from '../../src/agent/agent.js';
import { isAlive, isSameProcess, readProcStat } from '../../src/runtime/proc-identity.js';
import { processesUnder } from '../support/agent-harness.js';
import { apiStack, type ApiStack } from '../api/api-stack.js';

// A zombie has exited: only its parent's reaping is pending.
const alive = (pid: number, startTime: string) => isSameProcess(pid, startTime) && isAlive(pid);

describe('start-first updates', { timeout: 60_000 }, () => {
  let s: ApiStack;
  const recipe = () => s.fx.recipePath('svc');

  beforeAll(async () => {
    s = await apiStack({
      components: () => [
        {
          name: 'svc',
          version: '1.0.0',
          install: 'touch ready',
          command: 'sleep',
          args: ['1000'],
          health: { check: 'cmd:test -f ready', interval: '100ms', failureThreshold: 15 },
        },
      ],
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('starts the new instance beside the old one and stops the old one only once the new one is healthy', async () => {
    const old = s.agent.store.component('svc')!.instance as { kind: 'process'; pid: number; startTime: string };
    expect(alive(old.pid, old.startTime)).toBe(true);
    // Taking the strategy is itself a change of the recipe: this apply already rolls.
    s.fx.edit(recipe(), 'restart_policy = "always"', 'restart_policy = "always"\nupdate_strategy = "start-first"');
    s.fx.edit(recipe(), 'version = "1.0.0"', 'version = "1.1.0"');
    const seen: string[] = [];
    const onStarted = (_e: AgentEventMap['started'][0]) =>
      seen.push(`started old-alive=${alive(old.pid, old.startTime)}`);
    const onState = (e: AgentEventMap['state'][0]) =>
      seen.push(`${e.state} old-alive=${alive(old.pid, old.startTime)}`);
    s.agent.events.on('started', onStarted);
    s.agent.events.on('state', onState);
    await s.apply();
    s.agent.events.off('started', onStarted);
    s.agent.events.off('state', onState);

    const rec = s.agent.store.component('svc')!;
    const now = rec.instance as { kind: 'process'; pid: number; startTime: string };
    expect(rec).toMatchObject({ state: 'running', version: '1.1.0' });
    expect(now.pid).not.toBe(old.pid);
    expect(alive(now.pid, now.startTime)).toBe(true);
    expect(alive(old.pid, old.startTime)).toBe(false);
    expect(s.agent.store.history({ limit: 1 })[0]).toMatchObject({ outcome: 'success' });
    // The old instance was never stopped first: it was alive when the new one became running.
    expect(seen).toContain('running old-alive=true');
    expect(seen.some((x) => x.startsWith('stopping') || x.startsWith('stopped'))).toBe(false);
  });

  it('a new instance that never gets healthy is removed; the old one keeps serving and the apply fails', async () => {
    const before = s.agent.store.component('svc')!;
    const old = before.instance as { kind: 'process'; pid: number; startTime: string };
    s.fx.edit(recipe(), 'version = "1.1.0"', 'version = "1.2.0"');
    s.fx.edit(recipe(), 'check = "cmd:test -f ready"', 'check = "cmd:test -f never"');
    await s.apply();

    expect(s.agent.store.history({ limit: 1 })[0]).toMatchObject({ outcome: 'failure' });
    expect(s.agent.store.history({ limit: 1 })[0]!.failed).toEqual([
      { name: 'svc', reason: expect.stringMatching(/not healthy within its start budget.*old instance keeps serving/) },
    ]);
    const rec = s.agent.store.component('svc')!;
    // The record still describes the old instance: same pid, old version and hash, running.
    expect(rec).toMatchObject({ state: 'running', version: '1.1.0', hash: before.hash });
    expect(rec.instance).toEqual(old);
    expect(alive(old.pid, old.startTime)).toBe(true);
    // The new instance is gone: the only `sleep` left under the state directory is the old one.
    const sleeps = processesUnder(s.stateDir).filter((p) => readProcStat(p.pid)?.comm === 'sleep');
    expect(sleeps.map((p) => p.pid)).toEqual([old.pid]);
  });
});
