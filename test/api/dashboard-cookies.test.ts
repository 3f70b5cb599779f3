// Issue 28, finding 8, at the API: cookies are a host's, every port included, so a page on another loopback port can
// plant `keystone_session` cookies that the browser sends beside (and before) the operator's own. The agent takes the
// one cookie that is a current session with the CSRF header sent, whatever else rides along, and ends that one on sign
// out; the CSRF token is never a cookie; over https the session cookie is `__Host-` and Secure.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject, type InjectResponse } from '../support/http-inject.js';
import { sessionIdsOf } from '../../src/api/dashboard-sessions.js';
import { sleeper } from '../support/stack-fixture.js';
import { apiStack, type ApiStack } from './api-stack.js';

const HOST = '127.0.0.1:8080';

describe('dashboard session cookies beside planted ones', () => {
  let s: ApiStack;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keystone-dashboard-cookies-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(
      join(dir, 'index.html'),
      '<!doctype html><html lang="en"><script type="module" src="/assets/app-BBBB.js"></script></html>',
    );
    writeFileSync(join(dir, 'assets', 'app-BBBB.js'), 'export {};');
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({ public: ['/'], files: { '/assets/app-BBBB.js': { type: 'text/javascript; charset=utf-8' } } }),
    );
    s = await apiStack({ components: () => [sleeper('db')], api: { dashboard: { dir } } });
  });
  afterAll(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const code = (r: InjectResponse) => (r.json() as { error: { code: string } }).error.code;
  const get = (url: string, headers: Record<string, string>) =>
    inject(s.server, { method: 'GET', url, headers: { host: HOST, ...headers } });

  async function signIn(
    headers: Record<string, string> = {},
  ): Promise<{ id: string; csrf: string; setCookie: string[] }> {
    const r = await inject(s.server, {
      method: 'POST',
      url: '/v1/session',
      headers: { host: HOST, 'content-type': 'application/json', ...headers },
      payload: JSON.stringify({ token: s.token }),
    });
    expect(r.statusCode, r.body).toBe(200);
    const setCookie = ([] as string[]).concat(r.headers['set-cookie'] ?? []);
    return { id: /=([^;]*)/.exec(setCookie[0]!)![1]!, csrf: (r.json() as { csrf: string }).csrf, setCookie };
  }

  it('takes the operator’s session among cookies another port planted, first or last, under either name', async () => {
    const me = await signIn();
    for (const cookie of [
      `keystone_session=planted-with-path-v1; keystone_session=${me.id}`,
      `keystone_session=${me.id}; keystone_session=planted`,
      `__Host-keystone_session=planted; keystone_session=planted-too; keystone_session=${me.id}; keystone_csrf=planted`,
    ]) {
      const r = await get('/v1/components', { cookie, 'x-keystone-csrf': me.csrf });
      expect(r.statusCode, `${cookie}: ${r.body}`).toBe(200);
    }
    // The page's own code, which the browser asks for with cookies and no header.
    expect(
      (await get('/assets/app-BBBB.js', { cookie: `keystone_session=planted; keystone_session=${me.id}` })).statusCode,
    ).toBe(200);
  });

  it('takes no planted cookie for a session, nor a planted CSRF value: the closest refusal is told', async () => {
    const me = await signIn();
    const planted = await get('/v1/components', {
      cookie: 'keystone_session=planted; keystone_session=another',
      'x-keystone-csrf': 'planted',
    });
    expect([planted.statusCode, code(planted)]).toEqual([401, 'KS_SESSION_INVALID']);
    const wrongCsrf = await get('/v1/components', {
      cookie: `keystone_session=planted; keystone_session=${me.id}`,
      'x-keystone-csrf': 'planted',
    });
    expect([wrongCsrf.statusCode, code(wrongCsrf)]).toEqual([401, 'KS_CSRF_INVALID']);
    expect((await get('/assets/app-BBBB.js', { cookie: 'keystone_session=planted' })).statusCode).toBe(401);
  });

  it('with two sessions in the jar, the CSRF header says which; signing out ends that one only', async () => {
    const a = await signIn();
    const b = await signIn();
    const cookie = `keystone_session=${a.id}; keystone_session=${b.id}`;
    const out = await inject(s.server, {
      method: 'DELETE',
      url: '/v1/session',
      headers: { host: HOST, cookie, 'x-keystone-csrf': b.csrf },
    });
    expect(out.statusCode, out.body).toBe(204);
    const afterB = await get('/v1/components', { cookie, 'x-keystone-csrf': b.csrf });
    // B is gone; A is still a session, just not this header's.
    expect([afterB.statusCode, code(afterB)]).toEqual([401, 'KS_CSRF_INVALID']);
    const onlyB = await get('/v1/components', { cookie: `keystone_session=${b.id}`, 'x-keystone-csrf': b.csrf });
    expect([onlyB.statusCode, code(onlyB)]).toEqual([401, 'KS_SESSION_INVALID']);
    expect((await get('/v1/components', { cookie, 'x-keystone-csrf': a.csrf })).statusCode).toBe(200);
  });

  it('over https the cookie is __Host- and Secure, which a plain-http page of the same host can neither set nor replace', async () => {
    const me = await signIn({ 'x-forwarded-proto': 'https' });
    expect(me.setCookie).toHaveLength(1);
    expect(me.setCookie[0]).toMatch(
      /^__Host-keystone_session=[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Strict$/,
    );
    expect(
      (
        await get('/v1/components', {
          cookie: `keystone_session=planted; __Host-keystone_session=${me.id}`,
          'x-keystone-csrf': me.csrf,
        })
      ).statusCode,
    ).toBe(200);
    const out = await inject(s.server, {
      method: 'DELETE',
      url: '/v1/session',
      headers: {
        host: HOST,
        'x-forwarded-proto': 'https',
        cookie: `__Host-keystone_session=${me.id}`,
        'x-keystone-csrf': me.csrf,
      },
    });
    expect(([] as string[]).concat(out.headers['set-cookie'] ?? [])).toEqual([
      expect.stringMatching(
        /^__Host-keystone_session=; Max-Age=0; Path=\/; Expires=[^;]+; HttpOnly; Secure; SameSite=Strict$/,
      ),
    ]);
  });
});

describe('sessionIdsOf', () => {
  it('reads every session cookie in the order sent, either name, each value once, and nothing else', () => {
    expect(sessionIdsOf(undefined)).toEqual([]);
    expect(sessionIdsOf('keystone_csrf=x; other=y; keystone_session=')).toEqual([]);
    expect(
      sessionIdsOf(
        'keystone_session=a; x=1; __Host-keystone_session=b;keystone_session=c; keystone_session=a; keystone_session=d%2Fe',
      ),
    ).toEqual(['a', 'b', 'c', 'd/e']);
  });
});
