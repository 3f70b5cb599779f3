import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { criticalPath, layeredMakespan, nextSteps, type StartStatus } from '../../src/core/schedule.js';

const deps = (o: Record<string, string[]>) => new Map(Object.entries(o));
const status = (o: Record<string, StartStatus>) => new Map(Object.entries(o));

// The worked example: api (hard) and telemetry (ordering) on influxdb, web on api.
const STACK = {
  startOrder: ['influxdb', 'api', 'telemetry', 'web'],
  dependencies: deps({ influxdb: [], api: ['influxdb'], telemetry: ['influxdb'], web: ['api'] }),
  satisfiedOutside: new Set<string>(),
};

describe('the eager start schedule', () => {
  it('starts what has no dependencies first, then each component the moment its dependencies are healthy', () => {
    const all = (s: StartStatus) => status({ influxdb: s, api: s, telemetry: s, web: s });
    expect(nextSteps(STACK, all('waiting'), 4)).toEqual({ start: ['influxdb'], skip: [] });
    expect(
      nextSteps(STACK, status({ influxdb: 'healthy', api: 'waiting', telemetry: 'waiting', web: 'waiting' }), 4).start,
    ).toEqual(['api', 'telemetry']);
    // web does not wait for telemetry, which is in the same layer as api: only for api.
    expect(
      nextSteps(STACK, status({ influxdb: 'healthy', api: 'healthy', telemetry: 'starting', web: 'waiting' }), 4).start,
    ).toEqual(['web']);
  });

  it('respects the concurrency limit, counting what is already starting, in start order', () => {
    const s = status({ influxdb: 'healthy', api: 'waiting', telemetry: 'waiting', web: 'waiting' });
    expect(nextSteps(STACK, s, 1).start).toEqual(['api']);
    expect(
      nextSteps(STACK, status({ influxdb: 'healthy', api: 'starting', telemetry: 'waiting', web: 'waiting' }), 1).start,
    ).toEqual([]);
  });

  it('a failed dependency skips its dependents transitively, whatever the edge type; independent work goes on', () => {
    const s = status({ influxdb: 'failed', api: 'waiting', telemetry: 'waiting', web: 'waiting' });
    expect(nextSteps(STACK, s, 4)).toEqual({
      start: [],
      skip: [
        { name: 'api', because: 'influxdb' },
        { name: 'telemetry', because: 'influxdb' },
        { name: 'web', because: 'api' },
      ],
    });
    const independent = {
      ...STACK,
      startOrder: [...STACK.startOrder, 'lone'],
      dependencies: deps({ ...Object.fromEntries(STACK.dependencies), lone: [] }),
    };
    const s2 = status({ influxdb: 'healthy', api: 'failed', telemetry: 'waiting', web: 'waiting', lone: 'waiting' });
    expect(nextSteps(independent, s2, 4)).toEqual({
      start: ['telemetry', 'lone'],
      skip: [{ name: 'web', because: 'api' }],
    });
  });

  it('a dependency outside the start set counts when it runs healthy, and blocks when it does not', () => {
    const restartWeb = {
      startOrder: ['web'],
      dependencies: deps({ web: ['api'] }),
      satisfiedOutside: new Set(['api']),
    };
    expect(nextSteps(restartWeb, status({ web: 'waiting' }), 4).start).toEqual(['web']);
    expect(nextSteps({ ...restartWeb, satisfiedOutside: new Set() }, status({ web: 'waiting' }), 4).skip).toEqual([
      { name: 'web', because: 'api' },
    ]);
  });

  it('simulated to the end, every component starts after all its dependencies and no later than needed (property)', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 25 })
          .chain((n) =>
            fc.tuple(
              fc.constant(n),
              fc.array(fc.array(fc.nat(n), { maxLength: 3 }), { minLength: n, maxLength: n }),
              fc.array(fc.integer({ min: 1, max: 50 }), { minLength: n, maxLength: n }),
            ),
          ),
        ([n, rawDeps, durations]) => {
          const names = Array.from({ length: n }, (_, i) => `c${i}`);
          const dependencies = new Map(
            names.map((name, i) => [name, [...new Set(rawDeps[i]!.filter((d) => d < i).map((d) => `c${d}`))]]),
          );
          const input = { startOrder: names, dependencies, satisfiedOutside: new Set<string>() };
          const st = new Map<string, StartStatus>(names.map((x) => [x, 'waiting']));
          const finish = new Map<string, number>();
          const startedAt = new Map<string, number>();
          let now = 0;
          const running: Array<{ name: string; end: number }> = [];
          for (;;) {
            for (const name of nextSteps(input, st, Infinity).start) {
              st.set(name, 'starting');
              startedAt.set(name, now);
              running.push({ name, end: now + durations[names.indexOf(name)]! });
            }
            if (running.length === 0) break;
            running.sort((a, b) => a.end - b.end);
            const done = running.shift()!;
            now = done.end;
            st.set(done.name, 'healthy');
            finish.set(done.name, now);
          }
          for (const name of names) {
            const ds = dependencies.get(name)!;
            expect(startedAt.get(name)).toBe(Math.max(0, ...ds.map((d) => finish.get(d)!)));
          }
          const dur = (x: string) => durations[names.indexOf(x)]!;
          expect(now).toBe(criticalPath(names, dependencies, dur));
        },
      ),
    );
  });

  it('the layered makespan is never shorter than the critical path', () => {
    const d = (x: string) => ({ influxdb: 10, api: 1, telemetry: 30, web: 5 })[x]!;
    expect(criticalPath(STACK.startOrder, STACK.dependencies, d)).toBe(40);
    expect(layeredMakespan([['influxdb'], ['api', 'telemetry'], ['web']], d)).toBe(45);
  });
});
