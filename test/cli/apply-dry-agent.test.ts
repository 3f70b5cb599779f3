// `apply-dry` against the running agent: the default when one answers, or `--agent URL`, with the agent's token
// (--token, KEYSTONE_TOKEN or the token file), which its component list needs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiStack, type ApiStack } from '../api/api-stack.js';
import { runCtl } from '../support/cli-run.js';

let stack: ApiStack;
let url: string;
/** A state directory without a token file. */
let noToken: string;
beforeAll(async () => {
  noToken = mkdtempSync(join(tmpdir(), 'keystone-no-token-'));
  stack = await apiStack();
  await stack.apply();
  await stack.listen();
  url = `http://127.0.0.1:${portOf(stack)}`;
}, 60_000);
afterAll(async () => {
  await stack?.close();
  if (noToken) rmSync(noToken, { recursive: true, force: true });
});

function portOf(s: ApiStack): number {
  if (s.listeners?.port === undefined) throw new Error('the API is not listening on TCP');
  return s.listeners.port;
}

describe('apply-dry against the running agent', () => {
  it('compares with what the agent runs: nothing changes for the applied revision, then a bump restarts exactly its hard cascade', async () => {
    // The token from the agent's state directory, as on a device.
    const dry = (...extra: string[]) =>
      runCtl(
        [
          'apply-dry',
          stack.fx.plan,
          '--repo',
          stack.fx.dir,
          '--allow-unsigned',
          '--agent',
          url,
          '--state-dir',
          stack.stateDir,
          '--json',
          ...extra,
        ],
        '/',
      );
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

  it('the token may come from --token or KEYSTONE_TOKEN too', async () => {
    const base = [
      'apply-dry',
      stack.fx.plan,
      '--repo',
      stack.fx.dir,
      '--allow-unsigned',
      '--agent',
      url,
      '--state-dir',
      noToken,
      '--json',
    ];
    expect(JSON.parse((await runCtl([...base, '--token', stack.token], '/')).stdout).comparedWith).toEqual({
      kind: 'agent',
      url,
    });
    expect(JSON.parse((await runCtl(base, '/', { env: { KEYSTONE_TOKEN: stack.token } })).stdout).comparedWith).toEqual(
      { kind: 'agent', url },
    );
  });

  it('an agent that answers 401 is not "no agent": exit 1, saying a token is needed and where it would come from', async () => {
    const r = await runCtl(
      ['apply-dry', stack.fx.plan, '--repo', stack.fx.dir, '--allow-unsigned', '--agent', url, '--state-dir', noToken],
      '/',
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`the agent at ${url} answered but needs its API token`);
    expect(r.stderr).toContain(
      `no token was sent: pass --token, set KEYSTONE_TOKEN, or run as a user who can read the token file (${join(noToken, 'api-token')} is not readable (ENOENT))`,
    );
    expect(r.stderr).toContain('[KS_TOKEN_MISSING]');
    const wrong = await runCtl(
      [
        'apply-dry',
        stack.fx.plan,
        '--repo',
        stack.fx.dir,
        '--allow-unsigned',
        '--agent',
        url,
        '--token',
        '0'.repeat(64),
      ],
      '/',
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('[KS_TOKEN_INVALID]');
  });

  it('an explicit --agent that does not answer fails the operation (exit 1)', async () => {
    const dead = 'http://127.0.0.1:9';
    const r = await runCtl(
      ['apply-dry', stack.fx.plan, '--repo', stack.fx.dir, '--allow-unsigned', '--agent', dead],
      '/',
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('KS_AGENT_UNREACHABLE');
  });
});
