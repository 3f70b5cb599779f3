// Closing the API while a call waits for health: the call answers 503 at once (instead of holding the agent's exit
// for its two-minute timeout), and the engine still finishes the restart it was handed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ComponentSpec } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';
import { rawRequest } from './http-request.js';

/**
 * Healthy about a second after each start. The instance that stops takes its `ready` away: left behind, the next
 * instance's first probe could find it before its own `rm` ran, and pass at once (a flake under load).
 */
const slow: ComponentSpec = {
  name: 'slow',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', "trap 'rm -f ready; exit 0' TERM; rm -f ready; sleep 1; touch ready; sleep 1000 & wait"],
  health: { check: 'cmd:test -f ready', interval: '100ms', timeout: '1s', failureThreshold: 100 },
};

describe('closing the API', { timeout: 30_000 }, () => {
  let s: ApiStack;
  beforeAll(async () => {
    s = await apiStack({ components: () => [slow] });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers a waiting restart with 503 and closes without waiting for it', async () => {
    const { port } = await s.listen();
    const before = s.livePids().slow;
    const pending = rawRequest({
      port: port!,
      method: 'POST',
      path: '/v1/components/slow:restart?wait=health',
      headers: { authorization: `Bearer ${s.token}` },
    });
    await until(() => s.agent.store.component('slow')?.state === 'starting', 'the restart to begin');
    const t0 = Date.now();
    await s.listeners!.close();
    s.listeners = undefined;
    const res = await pending;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({
      error: { code: 'KS_SHUTTING_DOWN' },
      components: [{ name: 'slow', state: 'starting' }],
    });
    await until(() => s.agent.store.component('slow')?.state === 'running', 'the engine to finish the restart');
    expect(s.livePids().slow).not.toBe(before);
  });
});
