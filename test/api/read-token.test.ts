// Issue 13, finding 6: reads of the API need the token (SPEC §10). A component's view carries the configuration
// values it runs with, here a password planted in its recipe's [config]: without the token (or with a wrong one)
// every /v1 read is a 401 that shows none of it; /healthz and /metrics stay open and /metrics carries no
// configuration value; the Unix socket keeps its rule (its file mode is the authentication).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleeper, type ComponentSpec } from '../support/stack-fixture.js';
import { apiStack, type ApiStack } from './api-stack.js';
import { rawRequest } from './http-request.js';

const PASSWORD = 'hunter2-planted-in-config-7f3a';

/** Runs with the password as an argument, so that the password is one of its resolved inputs. */
const vault = (): ComponentSpec => ({
  name: 'vault',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', 'exec sleep 1000', 'vault', '{{config.password}}'],
});

const READS = ['/v1/components', '/v1/components/vault', '/v1/revision', '/v1/history', '/v1/history?limit=1'];

describe('API reads need the token', { timeout: 30_000 }, () => {
  let s: ApiStack;
  let port: number;
  let socketDir: string;
  let socketPath: string;

  beforeAll(async () => {
    s = await apiStack({ components: () => [sleeper('db')] });
    s.fx.add(vault());
    s.fx.edit(
      s.fx.recipePath('vault'),
      '[lifecycle.run]',
      `[config]\npassword = ${JSON.stringify(PASSWORD)}\n\n[lifecycle.run]`,
    );
    await s.apply();
    expect(s.agent.store.component('vault')?.state).toBe('running');
    socketDir = mkdtempSync(join(tmpdir(), 'keystone-api-sock-'));
    socketPath = join(socketDir, 'api.sock');
    port = (await s.listen(socketPath)).port!;
  });
  afterAll(async () => {
    await s?.close();
    if (socketDir) rmSync(socketDir, { recursive: true, force: true });
  });

  const codeOf = (json: unknown) => (json as { error: { code: string } }).error.code;

  it('with the token, the view shows the planted value (the fixture works)', async () => {
    const r = await s.get('/v1/components/vault');
    expect(r.statusCode).toBe(200);
    expect(r.json<{ inputs: Record<string, string> }>().inputs['config.password']).toBe(PASSWORD);
  });

  it('every /v1 GET without a token: 401 KS_TOKEN_MISSING, and nothing of the answer', async () => {
    for (const path of READS) {
      const r = await rawRequest({ port, path });
      expect(r.status, path).toBe(401);
      expect(codeOf(r.json), path).toBe('KS_TOKEN_MISSING');
      expect(r.headers['www-authenticate'], path).toBe('Bearer realm="keystone"');
      expect(r.text, path).not.toContain(PASSWORD);
      expect(r.text, path).not.toContain('vault');
      // The message says what to send, no longer that the request changes state.
      expect((r.json as { error: { message: string } }).error.message, path).toMatch(
        /send Authorization: Bearer <token>/,
      );
      expect((r.json as { error: { message: string } }).error.message, path).not.toMatch(/changes state/);
    }
    expect((await rawRequest({ port, method: 'HEAD', path: '/v1/components' })).status).toBe(401);
  });

  it('every /v1 GET with a wrong token (or another scheme): 401 KS_TOKEN_INVALID', async () => {
    for (const path of READS)
      for (const authorization of [`Bearer ${'0'.repeat(64)}`, `Bearer ${s.token}x`, `Basic ${s.token}`]) {
        const r = await rawRequest({ port, path, headers: { authorization } });
        expect(r.status, `${path} ${authorization}`).toBe(401);
        expect(codeOf(r.json), path).toBe('KS_TOKEN_INVALID');
        expect(r.text, path).not.toContain(PASSWORD);
      }
  });

  it('every /v1 GET with the token: 200', async () => {
    for (const path of READS) expect((await rawRequest({ port, path, headers: s.auth() })).status, path).toBe(200);
  });

  it('/healthz and /metrics stay open (GET and HEAD), without a token', async () => {
    for (const path of ['/healthz', '/metrics'])
      for (const method of ['GET', 'HEAD'])
        expect((await rawRequest({ port, method, path })).status, `${method} ${path}`).toBe(200);
    // Open on those exact routes only: a query or a path below them does not widen them.
    expect((await rawRequest({ port, path: '/healthz?x=1' })).status).toBe(200);
    expect((await rawRequest({ port, path: '/metrics/x' })).status).toBe(401);
    expect((await rawRequest({ port, path: '/v1/healthz' })).status).toBe(401);
  });

  it('/metrics carries no configuration value', async () => {
    const r = await rawRequest({ port, path: '/metrics' });
    expect(r.text).toContain('keystone_component_state{component="vault",state="running"} 1');
    expect(r.text).not.toContain(PASSWORD);
  });

  it('the Unix socket keeps its rule: its file mode is the authentication, reads need no token there', async () => {
    const r = await rawRequest({ socketPath, path: '/v1/components/vault', headers: { host: 'localhost' } });
    expect(r.status).toBe(200);
    expect((r.json as { inputs: Record<string, string> }).inputs['config.password']).toBe(PASSWORD);
  });

  it('no request, refused or not, put the password or the token in the log', () => {
    const text = JSON.stringify(s.lines);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(s.token);
  });
});
