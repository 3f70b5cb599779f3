// GET /v1/components keeps its last answer while nothing it is made of moves. An instance adopted after a restart
// is `unknown` until its check has run; when the check passes on an instance already recorded running, no record
// changes: the list must still move to `healthy` (it once served the `unknown` of a list asked for in that window
// for good, seen under emulation on a slow board).
import { describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import type { ApiContext } from '../../src/api/api-context.js';
import { ApiReply } from '../../src/api/api-reply.js';
import { ApiRouter, type ApiRequest } from '../../src/api/api-router.js';
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
    const router = new ApiRouter();
    registerComponentRoutes(router, { agent } as unknown as ApiContext);
    /** The route's handler alone, on a response that keeps what is written to it. */
    const list = async () => {
      let body = '';
      const res = { setHeader() {}, end: (b: string) => void (body = b) } as unknown as ServerResponse;
      const reply = new ApiReply(res);
      const request = {
        method: 'GET',
        url: '/v1/components',
        headers: {},
        query: {},
        params: { '*': '' },
      } as unknown as ApiRequest;
      await router.find('GET', '/v1/components')!.route.handler(request, reply);
      return body;
    };
    const health = async () =>
      (JSON.parse(await list()) as Array<{ name: string; health: string }>).map((c) => `${c.name}:${c.health}`);
    expect(await health()).toEqual(['telemetry:unknown', 'web:healthy']);
    unproven.delete('telemetry');
    expect(await health()).toEqual(['telemetry:healthy', 'web:healthy']);
    // And the same bytes again while nothing moves.
    const a = await list();
    expect(await list()).toBe(a);
  });
});
