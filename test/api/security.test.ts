// SPEC §10's protections, each against a running agent whose components must not notice: a missing or wrong token, a
// foreign Host (DNS rebinding), a foreign Origin (browser CSRF), a text/plain or oversized body, a path with `..`.
// Every refusal has its status and code, and after all of them the processes are the very same ones.
import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import type { AgentEventMap } from '../../src/agent/agent.js';
import { sleeper } from '../support/stack-fixture.js';
import { apiStack, type ApiStack } from './api-stack.js';
import { handWritten, rawRequest } from './http-request.js';

describe('API security', { timeout: 30_000 }, () => {
  let s: ApiStack;
  let port: number;
  let socketDir: string;
  let socketPath: string;
  let pidsBefore: Record<string, number>;
  const stateChanges: string[] = [];
  const onState = (e: AgentEventMap['state'][0]) => stateChanges.push(`${e.component}=${e.state}`);

  beforeAll(async () => {
    s = await apiStack({ components: () => [sleeper('db'), sleeper('app', [{ component: 'db', type: 'hard' }])] });
    socketDir = mkdtempSync(join(tmpdir(), 'keystone-api-sock-'));
    socketPath = join(socketDir, 'api.sock');
    port = (await s.listen(socketPath)).port!;
    pidsBefore = s.livePids();
    expect(Object.keys(pidsBefore).sort()).toEqual(['app', 'db']);
    s.agent.events.on('state', onState);
  });
  afterAll(async () => {
    s?.agent.events.off('state', onState);
    await s?.close();
    if (socketDir) rmSync(socketDir, { recursive: true, force: true });
  });

  const auth = () => ({ authorization: `Bearer ${s.token}` });
  const restart = '/v1/components/db:restart?wait=health';
  const post = (o: {
    method?: 'GET' | 'POST';
    url: string;
    headers?: Record<string, string>;
    payload?: string | Buffer;
  }) =>
    inject(s.server, {
      method: o.method ?? 'POST',
      url: o.url,
      headers: o.headers ?? {},
      ...(o.payload !== undefined && { payload: o.payload }),
    });
  const errorOf = (body: string) => (JSON.parse(body) as { error: { code: string; message: string } }).error;

  it('the token file is 64 hex digits, mode 0600, and is never rewritten', async () => {
    const path = join(s.stateDir, 'api-token');
    expect(lstatSync(path).isFile()).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    const { ensureApiToken } = await import('../../src/api/api-token.js');
    expect(ensureApiToken(s.stateDir)).toMatchObject({ token: s.token, created: false });
    expect(readFileSync(path, 'utf8')).toBe(`${s.token}\n`);
  });

  it('a POST without a token: 401 KS_TOKEN_MISSING', async () => {
    const r = await post({ url: restart });
    expect(r.statusCode).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="keystone"');
    expect(errorOf(r.body).code).toBe('KS_TOKEN_MISSING');
  });

  it('a POST with a wrong token (or another scheme): 401 KS_TOKEN_INVALID', async () => {
    for (const authorization of [
      `Bearer ${'0'.repeat(64)}`,
      `Bearer ${s.token}x`,
      `Bearer ${s.token.slice(0, 32)}`,
      `Basic ${s.token}`,
      s.token,
    ]) {
      const r = await post({ url: restart, headers: { authorization } });
      expect(r.statusCode, authorization).toBe(401);
      expect(errorOf(r.body).code).toBe('KS_TOKEN_INVALID');
    }
    // Sync is behind the same door; the GitHub webhook has its own (an HMAC of the body, see webhook.test.ts).
    expect((await post({ url: '/v1/sync' })).statusCode).toBe(401);
  });

  it('a foreign Host is refused with 403 KS_FOREIGN_HOST, even with the token, even for reads', async () => {
    for (const host of [
      'evil.example',
      'evil.example:8080',
      'localhost.evil.example',
      '127.0.0.1.nip.io',
      '10.0.0.1:8080',
      'localhost:99999',
      'local host',
    ]) {
      const r = await post({ url: restart, headers: { ...auth(), host } });
      expect(r.statusCode, host).toBe(403);
      expect(errorOf(r.body).code).toBe('KS_FOREIGN_HOST');
    }
    expect((await post({ method: 'GET', url: '/v1/components', headers: { host: 'evil.example' } })).statusCode).toBe(
      403,
    );
    // Over real HTTP too, and without any Host (HTTP/1.0).
    expect((await rawRequest({ port, path: '/v1/components', headers: { host: 'evil.example' } })).status).toBe(403);
    expect(await handWritten(port, 'GET /v1/components HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 403 /);
  });

  it('loopback names and addresses with any port are accepted as Host', async () => {
    for (const host of [
      'localhost',
      'localhost:8080',
      '127.0.0.1:1',
      '127.1.2.3',
      '[::1]:8080',
      '[::1]',
      'LOCALHOST:80',
    ])
      expect((await post({ method: 'GET', url: '/healthz', headers: { host } })).statusCode, host).toBe(200);
  });

  it('a foreign Origin is refused with 403 KS_FOREIGN_ORIGIN, even with the token', async () => {
    for (const origin of [
      'http://evil.example',
      'https://localhost.evil.example',
      'null',
      'file://',
      'http://127.0.0.1.evil.example:8080',
      'chrome-extension://abc',
    ]) {
      const r = await post({ url: restart, headers: { ...auth(), origin } });
      expect(r.statusCode, origin).toBe(403);
      expect(errorOf(r.body).code).toBe('KS_FOREIGN_ORIGIN');
    }
    const r = await post({ url: restart, headers: { ...auth(), 'sec-fetch-site': 'cross-site' } });
    expect(r.statusCode).toBe(403);
    // A page on this machine may (with the token); the dry run changes nothing.
    for (const origin of ['http://localhost:3000', 'https://127.0.0.1', 'http://[::1]:8080'])
      expect(
        (await post({ url: '/v1/components/db:restart?dry=true', headers: { ...auth(), origin } })).statusCode,
        origin,
      ).toBe(200);
  });

  it('a text/plain body is refused with 415 (a form can send it cross-origin without a preflight)', async () => {
    const r = await post({ url: restart, headers: { ...auth(), 'content-type': 'text/plain' }, payload: '{}' });
    expect(r.statusCode).toBe(415);
    expect(errorOf(r.body).code).toBe('KS_UNSUPPORTED_MEDIA_TYPE');
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])
      expect(
        (await post({ url: restart, headers: { ...auth(), 'content-type': type }, payload: 'a=b' })).statusCode,
        type,
      ).toBe(415);
  });

  it('an oversized body is refused with 413, and a body that is not {} with 400', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(70 * 1024) });
    const r = await post({ url: restart, headers: { ...auth(), 'content-type': 'application/json' }, payload: big });
    expect(r.statusCode).toBe(413);
    expect(errorOf(r.body).code).toBe('KS_BODY_TOO_LARGE');
    // Over a real connection, announced by Content-Length.
    expect(
      (
        await rawRequest({
          port,
          method: 'POST',
          path: restart,
          headers: { ...auth(), 'content-type': 'application/json' },
          body: big,
        })
      ).status,
    ).toBe(413);
    const bad = await post({
      url: restart,
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: '{"wait":"none"}',
    });
    expect(bad.statusCode).toBe(400);
    expect(errorOf(bad.body).code).toBe('KS_BAD_BODY');
    expect(
      (await post({ url: restart, headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"a":' }))
        .statusCode,
    ).toBe(400);
  });

  it('paths with .. or encoded traversal are refused with 400 before any routing', async () => {
    for (const path of [
      '/v1/components/../components/db:restart',
      '/v1/components/%2e%2e/db:restart',
      '/v1/components/..%2fdb:restart',
      '/v1/components/db%2F..%2F..%2Fetc%2Fpasswd',
      '/../../etc/passwd',
      '/v1/./components',
      '/v1/components/db%00:restart',
      '/v1/components\\..\\db:restart',
    ]) {
      const r = await rawRequest({ port, method: 'POST', path, headers: auth() });
      expect(r.status, path).toBe(400);
      expect((r.json as { error: { code: string } }).error.code, path).toBe('KS_BAD_PATH');
    }
    expect((await rawRequest({ port, path: '/v1/components/%2e%2e%2f%2e%2e%2fetc%2fpasswd' })).status).toBe(400);
    // Unknown paths need the token too (a client without it learns nothing of the routes), and are JSON 404s, never files.
    expect((await rawRequest({ port, path: '/etc/passwd' })).status).toBe(401);
    const r = await rawRequest({ port, path: '/etc/passwd', headers: auth() });
    expect(r.status).toBe(404);
    expect((r.json as { error: { code: string } }).error.code).toBe('KS_NOT_FOUND');
  });

  it('nothing was restarted or stopped by any refused request', () => {
    expect(stateChanges).toEqual([]);
    expect(s.livePids()).toEqual(pidsBefore);
  });

  it('the token never appears in the log, even after requests that carried wrong ones', () => {
    const text = JSON.stringify(s.lines);
    expect(text).not.toContain(s.token);
    expect(text).toContain('API request refused');
  });

  it('the Unix socket is 0600 and needs no token, but still refuses a foreign Origin', async () => {
    const st = statSync(socketPath);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    const foreign = await rawRequest({
      socketPath,
      method: 'POST',
      path: '/v1/components/app:restart?wait=health',
      headers: { origin: 'http://evil.example' },
    });
    expect(foreign.status).toBe(403);
    expect(s.livePids()).toEqual(pidsBefore);

    const r = await rawRequest({
      socketPath,
      method: 'POST',
      path: '/v1/components/app:restart?wait=health&timeout=20s',
      headers: { host: 'localhost' },
    });
    expect(r.status, r.text).toBe(200);
    const after = s.livePids();
    expect(r.json).toEqual({ component: 'app', pid: after.app, dependents: {}, wait: 'health', timeout: '20s' });
    expect(after.app).not.toBe(pidsBefore.app);
    expect(after.db).toBe(pidsBefore.db);
  });

  it('closing the listeners removes the socket file', async () => {
    await s.listeners!.close();
    expect(() => lstatSync(socketPath)).toThrow();
    s.listeners = undefined;
  });
});
