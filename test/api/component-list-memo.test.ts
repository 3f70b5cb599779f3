// GET /v1/components keeps its last answer while nothing it is made of moves. An instance adopted after a restart
// is `unknown` until its check has run; when the check passes on an instance already recorded running, no record
// changes: the list must still move to `healthy` (it once served the `unknown` of a list asked for in that window
// for good, seen under emulation on a slow board).
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { ApiContext } from '../../src/api/api-context.js';
import { registerComponentRoutes } from '../../src/api/routes/component-routes.js';
import type { ComponentRecord } from '../../src/store/component-records.js';

function record(name: string): ComponentRecord {
  return Object.freeze({
    name,
    hash: 'h',
    version: '1.0.0',
    runtime: 'process',
    position: 0,
    dependencies: [],
    instance: { kind: 'process', pid: 4242, startTime: '1' },
    state: 'running',
    held: false,
    since: 0,
    restarts: 0,
  }) as unknown as ComponentRecord;
}

describe('GET /v1/components', () => {
  it('answers anew when an adopted instance is proven, though no record changed', async () => {
    const records = [record('telemetry'), record('web')];
    const unproven = new Set(['telemetry']);
    const agent = {
      store: { components: () => records, component: (n: string) => records.find((r) => r.name === n) },
      engine: { desired: undefined, pidOf: () => 4242, unproven: (n: string) => unproven.has(n) },
    };
    const server = Fastify();
    registerComponentRoutes(server, { agent } as unknown as ApiContext);
    const health = async () => (await server.inject('/v1/components')).json<Array<{ name: string; health: string }>>().map((c) => `${c.name}:${c.health}`);
    try {
      expect(await health()).toEqual(['telemetry:unknown', 'web:healthy']);
      unproven.delete('telemetry');
      expect(await health()).toEqual(['telemetry:healthy', 'web:healthy']);
      // And the same bytes again while nothing moves.
      const a = (await server.inject('/v1/components')).body;
      expect((await server.inject('/v1/components')).body).toBe(a);
    } finally {
      await server.close();
    }
  });
});
