import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  CRASH_LOOP_LIMIT,
  decideRestart,
  FIRST_RESTART_MS,
  HEALTHY_SPELL_MS,
  MAX_BACKOFF_MS,
  refreshBudget,
} from '../../src/core/restart-policy.js';

const crash = { code: 1, signal: null };
const clean = { code: 0, signal: null };
const killed = { code: null, signal: 'SIGKILL' };
const half = () => 0.5;

describe('restart decisions (SPEC §5)', () => {
  it.each([
    ['always', crash, 'restart'],
    ['always', clean, 'restart'],
    ['on-failure', crash, 'restart'],
    ['on-failure', killed, 'restart'],
    ['on-failure', clean, 'stay-stopped'],
    ['on-failure', { code: null, signal: null }, 'restart'], // an adopted process: its status is unknown, so not clean
    ['never', crash, 'stay-stopped'],
  ] as const)('%s after exit %j → %s', (policy, exit, kind) => {
    expect(decideRestart(policy, exit, { restarts: 0 }, 0, half).kind).toBe(kind);
  });

  it('the first restart is immediate (about 100 ms), later ones grow, capped at 60 s', () => {
    expect(backoffDelay(1, half)).toBe(FIRST_RESTART_MS);
    const delays = Array.from({ length: 12 }, (_, i) => backoffDelay(i + 1, half));
    for (let i = 1; i < delays.length; i++) expect(delays[i]!).toBeGreaterThanOrEqual(delays[i - 1]!);
    expect(delays[11]).toBe(MAX_BACKOFF_MS);
  });

  it('jitter stays within ±20 % and never passes the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 40 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const base = Math.min(MAX_BACKOFF_MS, FIRST_RESTART_MS * 2 ** (attempt - 1));
        const d = backoffDelay(attempt, () => r);
        expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
        expect(d).toBeLessThanOrEqual(Math.min(MAX_BACKOFF_MS, Math.ceil(base * 1.2)));
      }),
    );
  });

  it(`after ${CRASH_LOOP_LIMIT} restarts without a healthy spell the component is crash-looping`, () => {
    let budget = { restarts: 0 };
    const kinds: string[] = [];
    for (let i = 0; i < CRASH_LOOP_LIMIT + 2; i++) {
      const d = decideRestart('always', crash, budget, i * 1000, half);
      kinds.push(d.kind);
      if (d.kind === 'restart') budget = { restarts: budget.restarts + 1 };
    }
    expect(kinds.filter((k) => k === 'restart')).toHaveLength(CRASH_LOOP_LIMIT);
    expect(kinds.slice(CRASH_LOOP_LIMIT)).toEqual(['crash-looping', 'crash-looping']);
  });

  it('ten healthy minutes give the budget back; less does not', () => {
    const exhausted = { restarts: CRASH_LOOP_LIMIT, healthySince: 1_000 };
    expect(decideRestart('always', crash, exhausted, 1_000 + HEALTHY_SPELL_MS - 1, half).kind).toBe('crash-looping');
    expect(decideRestart('always', crash, exhausted, 1_000 + HEALTHY_SPELL_MS, half)).toEqual({
      kind: 'restart',
      delayMs: FIRST_RESTART_MS,
      attempt: 1,
    });
    expect(refreshBudget({ restarts: 4 }, 10 * HEALTHY_SPELL_MS)).toEqual({ restarts: 4 });
  });
});
