import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';

function capture(pretty: boolean) {
  const lines: string[] = [];
  return { log: createLogger({ pretty, write: (l) => lines.push(l) }), lines };
}

describe('log lines in the form of SPEC §11', () => {
  it('renders the worked example lines on a terminal', () => {
    const { log, lines } = capture(true);
    log
      .child({ module: 'agent' })
      .info({ stop_order: [], start_order: ['influxdb', 'api'], no_touch: [] }, 'reconcile plan');
    log.child({ module: 'supervisor' }).info({ layer: 1, components: ['api', 'telemetry'] }, 'starting layer');
    log.child({ module: 'supervisor' }).info({ component: 'api', state: 'running' });
    log.child({ module: 'agent' }).info({ component: 'influxdb' }, 'reusing existing running instance (no restart)');
    log.child({ module: 'supervisor' }).info('all components running');
    expect(lines).toEqual([
      '[agent] reconcile plan stop_order=[] start_order=[influxdb api] no_touch=[]\n',
      '[supervisor] layer=1 components=[api telemetry] msg=starting layer\n',
      '[supervisor] component=api state=running\n',
      '[agent] component=influxdb msg=reusing existing running instance (no restart)\n',
      '[supervisor] all components running\n',
    ]);
  });

  it('writes JSON lines otherwise, with the same fields', () => {
    const { log, lines } = capture(false);
    log.child({ module: 'supervisor' }).warn({ component: 'api', revision: 'abc' }, 'unhealthy');
    const rec = JSON.parse(lines[0]!);
    expect(rec).toMatchObject({ level: 40, module: 'supervisor', component: 'api', revision: 'abc', msg: 'unhealthy' });
    expect(typeof rec.time).toBe('string');
    // ISO 8601 in UTC, as pino's isoTime wrote it (src/core/iso-time.ts now), and now.
    expect(rec.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(rec.time) - Date.now())).toBeLessThan(60_000);
  });
});
