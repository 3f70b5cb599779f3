// The refusal log on its own, with an injected clock and timer (issue 13, finding 8): the first refusal of a source
// at once, then one line with a count per source per interval while it goes on, a quiet source forgotten, and the
// sources beyond the cap sharing one count.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { OTHER_SOURCES, RefusalLog } from '../../src/api/refusal-log.js';

const MSG = 'API request refused';

function harness(opts: { maxSources?: number } = {}) {
  let t = 1_000_000;
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const timer: { fn?: () => void; ms?: number; cancelled: number } = { cancelled: 0 };
  const refusals = new RefusalLog({
    log,
    now: () => t,
    intervalMs: 60_000,
    ...opts,
    every: (fn, ms) => {
      timer.fn = fn;
      timer.ms = ms;
      return () => {
        timer.fn = undefined;
        timer.cancelled++;
      };
    },
  });
  return {
    refusals,
    lines,
    timer,
    advance: (ms: number) => (t += ms),
    /** The timer fires (as setInterval would, an interval later). */
    tick: () => timer.fn?.(),
    refuse: (source: string, n = 1, code = 'KS_TOKEN_MISSING') => {
      for (let i = 0; i < n; i++) refusals.refused(source, code, { method: 'GET', path: '/v1/components' }, MSG);
    },
  };
}

describe('RefusalLog', () => {
  it('logs the first refusal of a source at once, with its details, and counts the rest', () => {
    const h = harness();
    h.refuse('127.0.0.1', 1000);
    expect(h.lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: MSG,
        source: '127.0.0.1',
        code: 'KS_TOKEN_MISSING',
        method: 'GET',
        path: '/v1/components',
      }),
    ]);
    expect(h.timer.ms).toBe(60_000);
  });

  it('sums up one line per source per interval while it goes on, naming the count, the codes and the time', () => {
    const h = harness();
    h.refuse('127.0.0.1', 500);
    h.refuse('127.0.0.1', 499, 'KS_TOKEN_INVALID');
    h.advance(30_000);
    h.tick();
    expect(h.lines).toHaveLength(1);
    h.advance(30_000);
    h.tick();
    expect(h.lines).toHaveLength(2);
    expect(h.lines[1]).toMatchObject({
      level: 40,
      msg: `${MSG}: 998 more from 127.0.0.1 in the last 60s`,
      source: '127.0.0.1',
      refused: 998,
      codes: { KS_TOKEN_MISSING: 499, KS_TOKEN_INVALID: 499 },
      seconds: 60,
    });
    // Still going: counted in the next interval, summed up at its end, not line by line.
    h.refuse('127.0.0.1', 10);
    expect(h.lines).toHaveLength(2);
    h.advance(60_000);
    h.refuse('127.0.0.1');
    expect(h.lines.map((l) => l.msg)).toEqual([
      MSG,
      `${MSG}: 998 more from 127.0.0.1 in the last 60s`,
      `${MSG}: 10 more from 127.0.0.1 in the last 60s`,
    ]);
  });

  it('forgets a source after a quiet interval: its next refusal is logged in full again, and the timer stops', () => {
    const h = harness();
    h.refuse('127.0.0.1');
    h.advance(60_000);
    h.tick();
    expect(h.lines).toHaveLength(1);
    expect(h.timer.fn).toBeUndefined();
    h.refuse('127.0.0.1');
    expect(h.lines.map((l) => l.msg)).toEqual([MSG, MSG]);
    expect(h.timer.fn).toBeDefined();
  });

  it('counts each source and each kind of refusal apart', () => {
    const h = harness();
    h.refuse('127.0.0.1', 5);
    h.refuse('127.0.0.2', 5);
    h.refusals.refused('127.0.0.1', 'KS_WEBHOOK_SIGNATURE', {}, 'webhook refused: bad signature');
    expect(h.lines.map((l) => [l.msg, l.source])).toEqual([
      [MSG, '127.0.0.1'],
      [MSG, '127.0.0.2'],
      ['webhook refused: bad signature', '127.0.0.1'],
    ]);
  });

  it('beyond maxSources, the other sources share one count, so lines stay bounded however many addresses refuse', () => {
    const h = harness({ maxSources: 3 });
    for (let i = 1; i <= 1000; i++) h.refuse(`127.0.${Math.floor(i / 250)}.${i % 250}`, 3);
    // Three sources followed, then the first of the others, which stands for all of them.
    expect(h.lines).toHaveLength(4);
    h.advance(60_000);
    h.tick();
    const summaries = h.lines.slice(4);
    expect(summaries).toHaveLength(4);
    expect(summaries.at(-1)).toMatchObject({
      source: OTHER_SOURCES,
      refused: 997 * 3 - 1,
      msg: `${MSG}: ${997 * 3 - 1} more from other sources in the last 60s`,
    });
  });

  it('close() sums up what is pending at once, whatever is left of the interval', () => {
    const h = harness();
    h.refuse('127.0.0.1', 7);
    h.refuse('::1');
    h.advance(5_000);
    h.refusals.close();
    expect(h.lines.map((l) => l.msg)).toEqual([MSG, MSG, `${MSG}: 6 more from 127.0.0.1 in the last 5s`]);
    expect(h.timer.cancelled).toBe(1);
  });
});
