// The dashboard's access (SPEC §10, issue 19), against a running agent over HTTP: the token exchanged for
// a session cookie (HttpOnly, SameSite=Strict, Path=/, expiring) and a CSRF token in the answer's body, the session
// accepted only with its CSRF header and from the page's own origin; the login page open, the rest of the page's code only with a session; compressed, cached and
// framed as the page needs; no dashboard at all with --no-dashboard.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gzipSync } from 'node:zlib';
import { parse as parseSetCookie } from 'cookie';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject as httpInject, type InjectResponse } from '../support/http-inject.js';
import { buildServer, type ApiServer } from '../../src/api/build-server.js';
import { DashboardSessions } from '../../src/api/dashboard-sessions.js';
import { sleeper } from '../support/stack-fixture.js';
import { apiStack, type ApiStack } from './api-stack.js';

const HOST = '127.0.0.1:8080';
const ORIGIN = `http://${HOST}`;

/** A built dashboard as web/build.mjs writes it, made here so the test does not depend on the real page's names. */
function fakeDashboard(): string {
  const dir = mkdtempSync(join(tmpdir(), 'keystone-dashboard-'));
  mkdirSync(join(dir, 'assets'));
  const files: Record<string, string> = {
    '/assets/main-AAAA.js': 'import("./app-BBBB.js")',
    '/assets/app-BBBB.js': 'export const app = "the whole app";',
    '/assets/main-CCCC.css': 'body{color:black}',
  };
  for (const [path, text] of Object.entries(files)) {
    writeFileSync(join(dir, path), text);
    writeFileSync(join(dir, `${path}.br`), brotliCompressSync(text));
    writeFileSync(join(dir, `${path}.gz`), gzipSync(text));
  }
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html><html lang="en"><script type="module" src="/assets/main-AAAA.js"></script></html>',
  );
  const type = (p: string) => (p.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({
      public: ['/', '/assets/main-AAAA.js', '/assets/main-CCCC.css'],
      files: Object.fromEntries(Object.keys(files).map((p) => [p, { type: type(p) }])),
    }),
  );
  return dir;
}

interface Cookies {
  session: string;
  csrf: string;
  raw: Array<Record<string, string | undefined>>;
  setCookie: string[];
}

describe('dashboard access', { timeout: 30_000 }, () => {
  let s: ApiStack;
  let dir: string;
  let clock = Date.now();

  beforeAll(async () => {
    dir = fakeDashboard();
    s = await apiStack({
      components: () => [sleeper('db')],
      api: { now: () => clock, dashboard: { dir, ttlMs: 60_000 } },
    });
  });
  afterAll(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const inject = (
    server: ApiServer,
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ) =>
    httpInject(server, {
      method,
      url,
      headers: { host: HOST, ...headers },
      ...(body !== undefined && {
        payload: JSON.stringify(body),
        headers: { host: HOST, 'content-type': 'application/json', ...headers },
      }),
    });
  const code = (r: InjectResponse) => (r.json() as { error: { code: string } }).error.code;

  async function signIn(server = s.server, token = s.token): Promise<Cookies> {
    const r = await inject(server, 'POST', '/v1/session', { origin: ORIGIN }, { token });
    expect(r.statusCode, r.body).toBe(200);
    const setCookie = ([] as string[]).concat(r.headers['set-cookie'] ?? []);
    const raw = setCookie.map((c) => parseSetCookie(c.replace(/;\s*(HttpOnly|Secure)/gi, '; $1=1')));
    return {
      session: raw.find((c) => 'keystone_session' in c)!.keystone_session!,
      csrf: (r.json() as { csrf: string }).csrf,
      raw,
      setCookie,
    };
  }
  /** The cookies, and the CSRF header unless `csrf` is null. */
  const withSession = (c: Cookies, csrf: string | null = c.csrf, more: Record<string, string> = {}) => ({
    cookie: `keystone_session=${c.session}`,
    ...(csrf !== null && { 'x-keystone-csrf': csrf }),
    ...more,
  });

  it('exchanges the token for an HttpOnly, SameSite=Strict session cookie with an expiry, and a CSRF token in the body, never a cookie', async () => {
    const c = await signIn();
    // One cookie: a CSRF cookie would be readable (and replaceable) by a page on any other port of this host.
    expect(c.setCookie).toHaveLength(1);
    const session = c.setCookie[0]!;
    expect(session).toMatch(/^keystone_session=/);
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Strict/);
    expect(session).toMatch(/; Path=\//);
    expect(session).toMatch(/; Max-Age=60(;|$)/);
    expect(session).not.toMatch(/Secure/);
    expect(c.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Neither is the token: the browser never holds it.
    expect(c.session).not.toBe(s.token);
    expect(c.csrf).not.toBe(s.token);
    expect(c.session).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const r = await inject(s.server, 'GET', '/v1/session', withSession(c));
    expect(r.statusCode).toBe(200);
    expect(Date.parse((r.json() as { expiresAt: string }).expiresAt)).toBe(clock + 60_000);
  });

  it('refuses a wrong token, and a sign-in body that is not JSON (a cross-site form)', async () => {
    const wrong = await inject(s.server, 'POST', '/v1/session', { origin: ORIGIN }, { token: 'x'.repeat(64) });
    expect(wrong.statusCode).toBe(401);
    expect(code(wrong)).toBe('KS_TOKEN_INVALID');
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const form = await httpInject(s.server, {
      method: 'POST',
      url: '/v1/session',
      headers: { host: HOST, 'content-type': 'text/plain' },
      payload: `{"token":"${s.token}"}`,
    });
    expect(form.statusCode).toBe(415);
    expect(form.headers['set-cookie']).toBeUndefined();
  });

  it('accepts the session in place of the token only with its CSRF header', async () => {
    const c = await signIn();
    expect((await inject(s.server, 'GET', '/v1/components', withSession(c))).statusCode).toBe(200);
    const missing = await inject(s.server, 'GET', '/v1/components', withSession(c, null));
    expect([missing.statusCode, code(missing)]).toEqual([401, 'KS_CSRF_MISSING']);
    const other = await inject(
      s.server,
      'POST',
      '/v1/components/db:restart?dry=true',
      withSession(c, (await signIn()).csrf),
    );
    expect([other.statusCode, code(other)]).toEqual([401, 'KS_CSRF_INVALID']);
    const noCsrfPost = await inject(s.server, 'POST', '/v1/components/db:restart?dry=true', withSession(c, null));
    expect([noCsrfPost.statusCode, code(noCsrfPost)]).toEqual([401, 'KS_CSRF_MISSING']);
    const unknown = await inject(s.server, 'GET', '/v1/components', {
      cookie: 'keystone_session=forged',
      'x-keystone-csrf': c.csrf,
    });
    expect([unknown.statusCode, code(unknown)]).toEqual([401, 'KS_SESSION_INVALID']);
  });

  it('takes the session only from the page its own origin: not another loopback port, not another site', async () => {
    const c = await signIn();
    // A component's own web page (the example's web on 127.0.0.1:18088) shares the browser's cookie jar for 127.0.0.1.
    for (const headers of [{ origin: 'http://127.0.0.1:18088' }, { 'sec-fetch-site': 'same-site' }] as Array<
      Record<string, string>
    >) {
      const r = await inject(s.server, 'GET', '/v1/components', withSession(c, c.csrf, headers));
      expect([r.statusCode, code(r)]).toEqual([403, 'KS_FOREIGN_ORIGIN']);
    }
    const foreign = await inject(
      s.server,
      'POST',
      '/v1/components/db:restart?dry=true',
      withSession(c, c.csrf, { origin: 'http://evil.example' }),
    );
    expect([foreign.statusCode, code(foreign)]).toEqual([403, 'KS_FOREIGN_ORIGIN']);
    const sameOrigin = await inject(
      s.server,
      'POST',
      '/v1/components/db:restart?dry=true',
      withSession(c, c.csrf, { origin: ORIGIN, 'sec-fetch-site': 'same-origin' }),
    );
    expect(sameOrigin.statusCode).toBe(200);
    expect(sameOrigin.json()).toEqual({ stopOrder: ['db'], startOrder: ['db'] });
  });

  it('expires sessions, and signing out ends one at once', async () => {
    const c = await signIn();
    clock += 61_000;
    const expired = await inject(s.server, 'GET', '/v1/components', withSession(c));
    expect([expired.statusCode, code(expired)]).toEqual([401, 'KS_SESSION_EXPIRED']);
    const d = await signIn();
    const out = await inject(s.server, 'DELETE', '/v1/session', withSession(d));
    expect(out.statusCode).toBe(204);
    expect(([] as string[]).concat(out.headers['set-cookie'] ?? []).every((x) => /Max-Age=0/.test(x))).toBe(true);
    const after = await inject(s.server, 'GET', '/v1/components', withSession(d));
    expect([after.statusCode, code(after)]).toEqual([401, 'KS_SESSION_INVALID']);
  });

  it('serves the login page to anyone who reaches the API, the rest of the code only with a session', async () => {
    const page = await inject(s.server, 'GET', '/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect((await inject(s.server, 'GET', '/assets/main-AAAA.js')).statusCode).toBe(200);
    const app = await inject(s.server, 'GET', '/assets/app-BBBB.js');
    expect([app.statusCode, code(app)]).toEqual([401, 'KS_SESSION_MISSING']);
    const c = await signIn();
    // A browser loads a script with the cookie and no custom header.
    const signedIn = await inject(s.server, 'GET', '/assets/app-BBBB.js', { cookie: `keystone_session=${c.session}` });
    expect(signedIn.statusCode).toBe(200);
    expect(signedIn.body).toBe('export const app = "the whole app";');
    expect(
      (await inject(s.server, 'GET', '/assets/nothing.js', { cookie: `keystone_session=${c.session}` })).statusCode,
    ).toBe(404);
    // The API's own checks stay in front of the page: a rebound name gets nothing.
    const rebound = await httpInject(s.server, { method: 'GET', url: '/', headers: { host: 'evil.example' } });
    expect([rebound.statusCode, code(rebound)]).toEqual([403, 'KS_FOREIGN_HOST']);
  });

  it('sends the files compressed when the browser takes it, cached for good, and answers 304 to a known page', async () => {
    const br = await httpInject(s.server, {
      method: 'GET',
      url: '/assets/main-AAAA.js',
      headers: { host: HOST, 'accept-encoding': 'gzip, deflate, br' },
    });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe('import("./app-BBBB.js")');
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(br.headers.vary).toBe('accept-encoding');
    const gz = await httpInject(s.server, {
      method: 'GET',
      url: '/assets/main-CCCC.css',
      headers: { host: HOST, 'accept-encoding': 'gzip;q=1, br;q=0' },
    });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers['content-type']).toBe('text/css; charset=utf-8');
    const plain = await inject(s.server, 'GET', '/assets/main-CCCC.css');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const page = await inject(s.server, 'GET', '/');
    const again = await inject(s.server, 'GET', '/', { 'if-none-match': String(page.headers.etag) });
    expect(again.statusCode).toBe(304);
    // The API's answers stay uncached.
    expect((await s.get('/v1/components')).headers['cache-control']).toBe('no-store');
  });

  it('has no page, no sessions and no cookie login with --no-dashboard (the token still works)', async () => {
    const off = buildServer({ agent: s.agent, token: s.token, dashboard: false });
    try {
      const page = await inject(off, 'GET', '/');
      expect([page.statusCode, code(page)]).toEqual([401, 'KS_TOKEN_MISSING']);
      const login = await inject(off, 'POST', '/v1/session', {}, { token: s.token });
      expect(login.statusCode).toBe(401);
      expect(login.headers['set-cookie']).toBeUndefined();
      const c = await signIn();
      const cookie = await inject(off, 'GET', '/v1/components', withSession(c));
      expect([cookie.statusCode, code(cookie)]).toEqual([401, 'KS_TOKEN_MISSING']);
      expect(
        (
          await httpInject(off, {
            method: 'GET',
            url: '/v1/components',
            headers: { host: HOST, authorization: `Bearer ${s.token}` },
          })
        ).statusCode,
      ).toBe(200);
    } finally {
      await off.close();
    }
  });

  it('serves a page rebuilt under the running agent with its new files, not the old list', async () => {
    const before = await inject(s.server, 'GET', '/');
    writeFileSync(join(dir, 'assets', 'main-DDDD.js'), 'import("./app-BBBB.js") // rebuilt');
    writeFileSync(
      join(dir, 'index.html'),
      '<!doctype html><html lang="en"><script type="module" src="/assets/main-DDDD.js"></script></html>',
    );
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
      public: string[];
      files: Record<string, { type: string }>;
    };
    manifest.public.push('/assets/main-DDDD.js');
    manifest.files['/assets/main-DDDD.js'] = { type: 'text/javascript; charset=utf-8' };
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
    // A later modification time than the first read's, whatever the file system's time resolution.
    utimesSync(join(dir, 'manifest.json'), new Date(), new Date(Date.now() + 5_000));
    const after = await inject(s.server, 'GET', '/');
    expect(after.body).toContain('main-DDDD.js');
    expect(after.headers.etag).not.toBe(before.headers.etag);
    const entry = await inject(s.server, 'GET', '/assets/main-DDDD.js');
    expect([entry.statusCode, entry.body]).toEqual([200, 'import("./app-BBBB.js") // rebuilt']);
  });

  it("listening publicly: the page of the device's own name is its origin; another name, or a page posting to the webhook, is not", async () => {
    const server = buildServer({
      agent: s.agent,
      token: s.token,
      isAllowedHost: (h) => h === 'device.local',
      dashboard: { dir },
    });
    try {
      const host = 'device.local:8080';
      const login = await httpInject(server, {
        method: 'POST',
        url: '/v1/session',
        headers: { host, origin: `http://${host}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ token: s.token }),
      });
      expect(login.statusCode).toBe(200);
      const cookies = ([] as string[]).concat(login.headers['set-cookie'] ?? []).map((c) => c.split(';', 1)[0]!);
      const { csrf } = login.json() as { csrf: string };
      const asPage = (origin: string) =>
        httpInject(server, {
          method: 'POST',
          url: '/v1/components/db:restart?dry=true',
          headers: { host, origin, cookie: cookies.join('; '), 'x-keystone-csrf': csrf },
        });
      expect((await asPage(`http://${host}`)).statusCode).toBe(200);
      const other = await asPage('http://other.local:8080');
      expect([other.statusCode, code(other)]).toEqual([403, 'KS_FOREIGN_ORIGIN']);
      // The webhook's Host is not checked (it comes through any public name): an Origin equal to it proves nothing.
      const hook = await httpInject(server, {
        method: 'POST',
        url: '/v1/webhooks/github',
        headers: { host: 'evil.example', origin: 'http://evil.example', 'content-type': 'application/json' },
        payload: '{}',
      });
      expect([hook.statusCode, code(hook)]).toEqual([403, 'KS_FOREIGN_ORIGIN']);
    } finally {
      await server.close();
    }
  });

  it('says so when the page is not built, rather than answering with nothing', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'keystone-no-dashboard-'));
    writeFileSync(join(empty, 'manifest.json'), JSON.stringify({ public: [], files: {} }));
    const server = buildServer({ agent: s.agent, token: s.token, dashboard: { dir: empty } });
    try {
      const r = await inject(server, 'GET', '/');
      expect([r.statusCode, code(r)]).toEqual([503, 'KS_DASHBOARD_UNBUILT']);
    } finally {
      await server.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('DashboardSessions', () => {
  it('keeps at most maxSessions, dropping the oldest, and never stores the ids themselves', () => {
    let now = 1_000;
    let n = 0;
    const sessions = new DashboardSessions({
      now: () => now,
      maxSessions: 3,
      ttlMs: 100,
      random: (len) => Buffer.alloc(len, ++n),
    });
    const made = [sessions.create(), sessions.create(), sessions.create(), sessions.create()];
    expect(sessions.size).toBe(3);
    expect(sessions.check(made[0]!.id, made[0]!.csrf)).toMatchObject({ ok: false, code: 'KS_SESSION_INVALID' });
    expect(sessions.check(made[3]!.id, made[3]!.csrf)).toEqual({
      ok: true,
      session: { expiresAt: 1_100 },
      id: made[3]!.id,
    });
    expect(JSON.stringify([...(sessions as unknown as { entries: Map<string, unknown> }).entries])).not.toContain(
      made[3]!.id,
    );
    now = 1_100;
    expect(sessions.current([made[3]!.id])).toBe(false);
    expect(sessions.check(made[3]!.id, made[3]!.csrf)).toMatchObject({ ok: false, code: 'KS_SESSION_EXPIRED' });
  });
});
