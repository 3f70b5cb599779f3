// `apply-dry` against the running agent: the default when one answers, or `--agent URL`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiStack, type ApiStack } from '../api/api-stack.js';
import { runCtl } from '../support/cli-run.js';

let stack: ApiStack;
let url: string;
beforeAll(async () => {
  stack = await apiStack();
  await stack.apply();
  await stack.listen();
  url = `http://127.0.0.1:${portOf(stack)}`;
}, 60_000);
afterAll(async () => stack?.close());

function portOf(s: ApiStack): number {
  const addr = s.server.server.address();
  if (!addr || typeof addr === 'string') throw new Error('the API is not listening on TCP');
  return addr.port;
}

describe('apply-dry against the running agent', () => {
  it('compares with what the agent runs: nothing changes for the applied revision, then a bump restarts exactly its hard cascade', async () => {
    const dry = (...extra: string[]) => runCtl(['apply-dry', stack.fx.plan, '--repo', stack.fx.dir, '--allow-unsigned', '--agent', url, '--json', ...extra], '/');
    const same = JSON.parse((await dry()).stdout);
    expect(same.comparedWith).toEqual({ kind: 'agent', url });
    expect(same.startOrder).toEqual([]);
    expect(same.stopOrder).toEqual([]);
    stack.fx.bumpVersion('api', '1.5.0');
    const bumped = JSON.parse((await dry()).stdout);
    expect(bumped.stopOrder).toEqual(['web', 'api']);
    expect(bumped.startOrder).toEqual(['api', 'web']);
    expect(bumped.reasons.api).toBe('version 1.4.0 → 1.5.0');
  });

  it('an explicit --agent that does not answer fails the operation (exit 1)', async () => {
    const dead = 'http://127.0.0.1:9';
    const r = await runCtl(['apply-dry', stack.fx.plan, '--repo', stack.fx.dir, '--allow-unsigned', '--agent', dead], '/');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('KS_AGENT_UNREACHABLE');
  });
});
