// The restart calls of the worked example (reference/four-component-stack.md, SPEC §10) over real HTTP on loopback,
// against an in-process agent running the four stand-ins: the dry run's exact JSON, then the real restart that
// answers only once influxdb, api and web are healthy again, with their new pids.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEventMap } from '../../src/agent/agent.js';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import { apiStack, type ApiStack } from './api-stack.js';

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

describe('the worked example through the HTTP API', { timeout: 60_000 }, () => {
  let s: ApiStack;
  let base: string;

  beforeAll(async () => {
    s = await apiStack();
    const l = await s.listen();
    base = `http://127.0.0.1:${l.port}`;
  });
  afterAll(async () => {
    await s?.close();
  });

  const post = (path: string) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` } });

  it('runs the four components', () => {
    expect(s.agent.store.components().map((c) => [c.name, c.state])).toEqual([
      ['influxdb', 'running'],
      ['api', 'running'],
      ['telemetry', 'running'],
      ['web', 'running'],
    ]);
  });

  it('POST influxdb:restart?dry=true answers exactly the orders and restarts nothing', async () => {
    const before = s.livePids();
    const states: string[] = [];
    const onState = (e: AgentEventMap['state'][0]) => states.push(`${e.component}=${e.state}`);
    s.agent.events.on('state', onState);
    const res = await post('/v1/components/influxdb:restart?dry=true');
    s.agent.events.off('state', onState);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.text()).toBe('{"stopOrder":["web","api","influxdb"],"startOrder":["influxdb","api","web"]}');
    expect(states).toEqual([]);
    expect(s.livePids()).toEqual(before);
  });

  it('POST influxdb:restart?wait=health&timeout=120s answers once api is healthy again, with the new pids', async () => {
    const before = s.livePids();
    const recordsBefore = new Map(s.agent.store.components().map((c) => [c.name, c.instance]));
    const runningAt = new Map<string, number>();
    const onState = (e: AgentEventMap['state'][0]) => {
      if (e.state === 'running') runningAt.set(e.component, Date.now());
    };
    s.agent.events.on('state', onState);
    const sent = Date.now();
    const res = await post('/v1/components/influxdb:restart?wait=health&timeout=120s');
    // Read the store the moment the answer arrives, before anything else can run.
    const arrived = Date.now();
    const statesAtArrival = Object.fromEntries(s.agent.store.components().map((c) => [c.name, c.state]));
    s.agent.events.off('state', onState);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const body = JSON.parse(text) as {
      component: string;
      pid: number;
      dependents: Record<string, number>;
      wait: string;
      timeout: string;
    };

    // The shape of SPEC §10, key for key.
    expect(Object.keys(body)).toEqual(['component', 'pid', 'dependents', 'wait', 'timeout']);
    expect(Object.keys(body.dependents)).toEqual(['api', 'web']);
    expect(body).toMatchObject({ component: 'influxdb', wait: 'health', timeout: '2m0s' });

    // Healthy again before the answer: api (and web, and influxdb) were recorded running after the call began.
    expect(statesAtArrival).toEqual({ influxdb: 'running', api: 'running', telemetry: 'running', web: 'running' });
    for (const name of ['influxdb', 'api', 'web']) {
      const t = runningAt.get(name);
      expect(t, `${name} became running during the call`).toBeDefined();
      expect(t!).toBeGreaterThanOrEqual(sent);
      expect(t!).toBeLessThanOrEqual(arrived);
    }

    // The answer's pids are the new live processes of the stand-ins; the old ones are gone.
    const after = s.livePids();
    const answered = { influxdb: body.pid, api: body.dependents.api!, web: body.dependents.web! };
    for (const [name, pid] of Object.entries(answered)) {
      expect(pid, name).toBe(after[name]);
      expect(pid, `${name} has a new pid`).not.toBe(before[name]);
      expect(
        cmdline(pid).some((a) => a.endsWith(`fake-${name}.mjs`)),
        `/proc/${pid} runs fake-${name}.mjs`,
      ).toBe(true);
      const old = recordsBefore.get(name);
      expect(old?.kind === 'process' && isSameProcess(old.pid, old.startTime), `the old ${name} process is gone`).toBe(
        false,
      );
    }
    // telemetry depends on influxdb by ordering only: untouched.
    expect(after.telemetry).toBe(before.telemetry);
    expect(runningAt.has('telemetry')).toBe(false);
  });

  it('every log line about a component carries its name and the revision (SPEC §11)', () => {
    const about = s.lines.filter((l) => typeof l.component === 'string');
    expect(about.length).toBeGreaterThan(20);
    expect(about.filter((l) => typeof l.revision !== 'string')).toEqual([]);
  });
});
