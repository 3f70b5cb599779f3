// lsRefsV2 against the real smart-HTTP server (git http-backend), which records every request: one POST per listing
// and no discovery before it; and the remote cache's look, one request per poll once the first look has shown v2.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OperationError } from '../../src/core/errors.js';
import { TransferBudget } from '../../src/git/git-http-client.js';
import { GitServerBusyError, httpDate, lsRefsRequest, lsRefsV2 } from '../../src/git/git-ls-refs.js';
import { isValidRefName, parseLsRefsAnswer } from '../../src/git/ls-refs-answer.js';
import { GitRemoteCache, GitServerBusyError as ReExported } from '../../src/git/git-remote-cache.js';
import { codedFailure } from '../support/coded-failure.js';
import { servedDuring, startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (...args: string[]) => (await run('git', args, { env: GIT_ENV })).stdout.trim();

let root: string;
let server: GitHttpServer;
let bare: string;
let main: string;
let other: string;
let tagObject: string;
const WAVE1 = 'refs/keystone-rollout/w1/';
const WAVE2 = 'refs/keystone-rollout/w2/';

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-ls-refs-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  bare = server.createRepository('fleet');
  const ws = join(root, 'ws');
  await git('init', '--quiet', '--initial-branch=main', ws);
  await git('-C', ws, 'commit', '--quiet', '--allow-empty', '-m', 'one');
  main = await git('-C', ws, 'rev-parse', 'HEAD');
  await git('-C', ws, 'commit', '--quiet', '--allow-empty', '-m', 'two');
  other = await git('-C', ws, 'rev-parse', 'HEAD');
  await git('-C', ws, 'tag', '-a', '-m', 'release', 'v1', main);
  tagObject = await git('-C', ws, 'rev-parse', 'v1');
  await git(
    '-C',
    ws,
    'push',
    '--quiet',
    bare,
    `${main}:refs/heads/main`,
    `${other}:refs/heads/main-old`,
    'refs/tags/v1:refs/tags/v1',
  );
  // A wave's refs as devices write them (names only matter here); one packed, the others loose.
  await git('-C', bare, 'update-ref', `${WAVE1}3/dev-1/${main}-success`, main);
  await git('-C', bare, 'pack-refs', '--all');
  await git('-C', bare, 'update-ref', `${WAVE1}a/dev-2/${main}-failure`, other);
  await git('-C', bare, 'update-ref', `${WAVE2}3/dev-3/${main}-success`, main);
});

afterEach(() => {
  server.cannedAnswers.length = 0;
  server.delayMs = 0;
  server.token = undefined;
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

const served = <T>(fn: () => Promise<T>) => servedDuring(server, fn);

const failure = codedFailure;

async function codeOf(p: Promise<unknown>): Promise<string> {
  return (await failure(p)).code;
}

describe('lsRefsV2 against git http-backend', () => {
  it('is ONE request, a protocol v2 POST with no discovery before it, answering several prefixes with only their refs', async () => {
    const before = Date.now();
    const { value, reqs } = await served(() =>
      lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/main', WAVE1, 'refs/tags/'] }),
    );
    const after = Date.now();
    expect(reqs.map((q) => `${q.method} ${q.path} ${q.protocol} ${q.status}`)).toEqual([
      'POST /fleet.git/git-upload-pack version=2 200',
    ]);
    expect(value.refs).toEqual([
      { ref: 'refs/heads/main', oid: main },
      { ref: 'refs/heads/main-old', oid: other }, // a prefix is a prefix: the caller picks the exact ref
      { ref: `${WAVE1}3/dev-1/${main}-success`, oid: main }, // packed
      { ref: `${WAVE1}a/dev-2/${main}-failure`, oid: other }, // loose
      { ref: 'refs/tags/v1', oid: tagObject }, // the tag object itself, not peeled
    ]);
    // The answer's Date header (whole seconds) is the host's clock.
    expect(value.serverTime).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(value.serverTime).toBeLessThanOrEqual(after);
    expect(value.bytesSent).toBe(reqs[0]!.received);
    expect(value.bytesReceived).toBe(reqs[0]!.bytes);
  });

  it('lists nothing for a prefix nothing is under, and sends the Authorization header it is given', async () => {
    server.token = 'tok-123';
    const { value, reqs } = await served(() =>
      lsRefsV2({
        url: server.url('fleet'),
        prefixes: ['refs/keystone-rollout/w9/'],
        headers: { authorization: 'Bearer tok-123' },
      }),
    );
    expect(value.refs).toEqual([]);
    expect(reqs).toHaveLength(1);
  });

  it('401/403: KS_GIT_AUTH_FAILED at once (no point falling back), saying whether a token was given', async () => {
    server.token = 'tok-123';
    const none = await served(() => codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'] })));
    expect(none.value).toBe('KS_GIT_AUTH_FAILED');
    expect(none.reqs).toHaveLength(1);
    const err = await failure(
      lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'], headers: { Authorization: 'Bearer wrong' } }),
    );
    expect(err.message).toContain('refused the token');
    expect(err.message).not.toContain('wrong');
  });

  it.each([503, 429])(
    '%i with Retry-After surfaces as GitServerBusyError (KS_GIT_SERVER_BUSY) carrying it',
    async (status) => {
      server.cannedAnswers.push({ status, headers: { 'retry-after': '120' } });
      const { value: err, reqs } = await served(() =>
        failure(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'] })),
      );
      expect(err).toBeInstanceOf(GitServerBusyError);
      expect(err).toBeInstanceOf(ReExported); // the same class the Git source checks for
      expect(err).toMatchObject({ code: 'KS_GIT_SERVER_BUSY', status, retryAfter: '120' });
      expect(reqs).toHaveLength(1);
      // The connection went back to the pool in a usable state: the next listing works.
      expect((await lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/main'] })).refs[0]).toEqual({
        ref: 'refs/heads/main',
        oid: main,
      });
    },
  );

  it('a server answering garbage, another content type, or 4xx: KS_GIT_SERVER_UNSUPPORTED (callers fall back)', async () => {
    // 200 with the right content type and a body that is not pkt-lines ("HTTP 200 (canned)").
    server.cannedAnswers.push({ status: 200, headers: { 'content-type': 'application/x-git-upload-pack-result' } });
    expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'] }))).toBe(
      'KS_GIT_SERVER_UNSUPPORTED',
    );
    server.cannedAnswers.push({ status: 200, headers: { 'content-type': 'text/html' } });
    expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'] }))).toBe(
      'KS_GIT_SERVER_UNSUPPORTED',
    );
    for (const status of [400, 405, 415]) {
      server.cannedAnswers.push({ status });
      expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'] }))).toBe(
        'KS_GIT_SERVER_UNSUPPORTED',
      );
    }
    server.cannedAnswers.push({ status: 500 });
    expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/'] }))).toBe('KS_GIT_HTTP_ERROR');
  });

  it('a server that does not get the Git-Protocol header (a proxy drops it: git answers in v0) is KS_GIT_SERVER_UNSUPPORTED', async () => {
    const proxy = await headerDroppingProxy(server.port);
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/fleet.git`;
      const err = await failure(lsRefsV2({ url, prefixes: ['refs/heads/'] }));
      expect(err).toMatchObject({ code: 'KS_GIT_SERVER_UNSUPPORTED' });
      expect(err.message).toContain('not protocol v2');
      expect(server.requests.at(-1)).toMatchObject({ method: 'POST', status: 200 });
      expect(server.requests.at(-1)!.protocol).toBeUndefined(); // the backend saw no Git-Protocol: a v0 exchange
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('is bounded: KS_GIT_FETCH_TOO_LARGE past maxBytes, KS_GIT_TIMEOUT past timeoutMs, KS_GIT_UNREACHABLE with no server', async () => {
    expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/'], maxBytes: 100 }))).toBe(
      'KS_GIT_FETCH_TOO_LARGE',
    );
    server.delayMs = 3_000;
    const t0 = Date.now();
    expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/'], timeoutMs: 200 }))).toBe(
      'KS_GIT_TIMEOUT',
    );
    expect(Date.now() - t0).toBeLessThan(2_500);
    server.delayMs = 0;
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    expect(await codeOf(lsRefsV2({ url: `http://127.0.0.1:${port}/fleet.git`, prefixes: ['refs/'] }))).toBe(
      'KS_GIT_UNREACHABLE',
    );
  });

  it("runs under a caller's budget and counts into it", async () => {
    const budget = new TransferBudget(1 << 20, 10_000, 'a test');
    const r = await budget.run(() => lsRefsV2({ url: server.url('fleet'), prefixes: ['refs/heads/main'], budget }));
    expect(budget.requests).toBe(1);
    expect(budget.sent).toBe(r.bytesSent);
    expect(budget.received).toBe(r.bytesReceived);
  });

  it('refuses prefixes it cannot send (KS_USAGE), before any request', async () => {
    const from = server.requests.length;
    for (const prefixes of [
      [],
      [''],
      ['refs/heads/a b'],
      ['refs/heads/\nx'],
      Array.from({ length: 5000 }, (_, i) => `refs/x/${i}`),
    ])
      expect(await codeOf(lsRefsV2({ url: server.url('fleet'), prefixes }))).toBe('KS_USAGE');
    expect(server.requests.length).toBe(from);
  });
});

describe('the ls-refs request and answer', () => {
  const pkt = (s: string) => `${(Buffer.byteLength(s) + 4).toString(16).padStart(4, '0')}${s}`;
  const answer = (...lines: string[]) => Buffer.from(lines.map(pkt).join('') + '0000');
  const OID = 'a'.repeat(40);

  it('writes command, agent, delimiter, one ref-prefix per prefix (deduplicated), flush', () => {
    expect(Buffer.from(lsRefsRequest(['refs/heads/main', 'refs/x/', 'refs/x/'], 'keystone')).toString()).toBe(
      '0014command=ls-refs\n0013agent=keystone\n0001001fref-prefix refs/heads/main\n0017ref-prefix refs/x/\n0000',
    );
  });

  it('reads refs with attributes and without a trailing newline', () => {
    expect(
      parseLsRefsAnswer(
        answer(`${OID} refs/heads/main symref-target:refs/heads/x\n`, `${'b'.repeat(40)} refs/tags/v1 peeled:${OID}`),
      ),
    ).toEqual([
      { ref: 'refs/heads/main', oid: OID },
      { ref: 'refs/tags/v1', oid: 'b'.repeat(40) },
    ]);
    expect(parseLsRefsAnswer(Buffer.from('0000'))).toEqual([]);
  });

  it.each([
    ['an empty body (v0)', Buffer.alloc(0)],
    ['no flush', Buffer.from(pkt(`${OID} refs/heads/main\n`))],
    ['data after the flush', Buffer.concat([answer(`${OID} refs/heads/main\n`), Buffer.from('0000')])],
    ['a short oid', answer(`${'a'.repeat(39)} refs/heads/main\n`)],
    ['an upper-case oid', answer(`${'A'.repeat(40)} refs/heads/main\n`)],
    ['a control character in a name', answer(`${OID} refs/heads/ma\u0007in\n`)],
    ['an escape sequence in a name', answer(`${OID} refs/heads/\u001b[2Jmain\n`)],
    ['a name with ..', answer(`${OID} refs/heads/../../etc\n`)],
    ['no name', answer(`${OID}\n`)],
    ['a duplicate', answer(`${OID} refs/heads/main\n`, `${OID} refs/heads/main\n`)],
    ['an ERR line', answer('ERR upload-pack: not our ref\n')],
    ['a delimiter', Buffer.from(`0001${pkt(`${OID} refs/heads/main\n`)}0000`)],
    ['a length past the end', Buffer.from('00ff' + `${OID} refs/heads/main\n`)],
    ['not hex', Buffer.from('HTTP 200 OK\n')],
    [
      'not UTF-8',
      Buffer.concat([Buffer.from('0036' + OID + ' refs/'), Buffer.from([0xff, 0xfe, 0xfd, 0x0a]), Buffer.from('0000')]),
    ],
  ])('refuses %s with KS_GIT_SERVER_UNSUPPORTED', (_what, body) => {
    expect(() => parseLsRefsAnswer(body)).toThrow(expect.objectContaining({ code: 'KS_GIT_SERVER_UNSUPPORTED' }));
  });

  it('never crashes on any bytes: a listing or a coded error', () => {
    const valid = fc.constantFrom(
      `${OID} refs/heads/main\n`,
      `${OID} refs/a\n`,
      'ERR x',
      '\u0000',
      `${OID} HEAD symref-target:refs/heads/main\n`,
    );
    const arb = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.array(fc.oneof(valid, fc.string({ maxLength: 60 })), { maxLength: 6 }).map((lines) => answer(...lines)),
    );
    fc.assert(
      fc.property(arb, (body) => {
        try {
          for (const r of parseLsRefsAnswer(body))
            expect(isValidRefName(r.ref) && /^[0-9a-f]{40}$/.test(r.oid)).toBe(true);
        } catch (e) {
          expect((e as OperationError).code).toBe('KS_GIT_SERVER_UNSUPPORTED');
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('reads only an IMF-fixdate as the server time', () => {
    expect(httpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
    for (const bad of [
      undefined,
      '',
      '1',
      'yesterday',
      'Sunday, 06-Nov-94 08:49:37 GMT',
      'Sun, 06 Nov 1994 08:49:37 +0200',
    ])
      expect(httpDate(bad)).toBeUndefined();
  });
});

describe('the remote cache look', () => {
  function cache(name = 'fleet', headers: Record<string, string> = {}) {
    return new GitRemoteCache({
      url: server.url(name),
      branchRef: 'refs/heads/main',
      cacheDir: join(root, 'cache'),
      headers,
      maxFetchBytes: 1 << 20,
      fetchTimeoutMs: 10_000,
      maxPacks: 10,
      maxCacheBytes: 1 << 24,
      redact: (t) => t,
    });
  }

  it('discovers at the first look, then looks with the ls-refs POST alone: one request a poll', async () => {
    const c = cache();
    const first = await served(() => c.lookRemote());
    expect(first.value).toBe(main); // not main-old, which the prefix also matches
    expect(first.reqs.map((q) => `${q.method} ${q.path} ${q.protocol}`)).toEqual([
      'GET /fleet.git/info/refs version=2',
      'POST /fleet.git/git-upload-pack version=2',
    ]);
    for (let i = 0; i < 3; i++) {
      const next = await served(() => c.lookRemote());
      expect(next.value).toBe(main);
      expect(next.reqs.map((q) => `${q.method} ${q.path} ${q.protocol}`)).toEqual([
        'POST /fleet.git/git-upload-pack version=2',
      ]);
    }
    expect(c.totals.requests).toBe(5);
    const recorded = server.requests.slice(-5);
    expect(c.totals.bytesSent).toBe(recorded.reduce((n, q) => n + q.received, 0));
    expect(c.totals.bytesReceived).toBe(recorded.reduce((n, q) => n + q.bytes, 0));
  });

  it('a POST alone refused as unsupported: the same look falls back to the discovery, and later looks keep to it', async () => {
    const c = cache();
    await c.lookRemote();
    server.cannedAnswers.push({ status: 400, when: (q) => q.method === 'POST' });
    const refused = await served(() => c.lookRemote());
    expect(refused.value).toBe(main);
    expect(refused.reqs.map((q) => `${q.method} ${q.status}`)).toEqual(['POST 400', 'GET 200', 'POST 200']);
    const later = await served(() => c.lookRemote());
    expect(later.reqs.map((q) => q.method)).toEqual(['GET', 'POST']);
    // Not for good: a hundred looks on, the POST alone is tried again (the refusal may have been a proxy's mood).
    for (let i = 0; i < 98; i++) await c.lookRemote();
    const again = await served(() => c.lookRemote());
    expect(again.reqs.map((q) => q.method)).toEqual(['GET', 'POST']);
    const direct = await served(() => c.lookRemote());
    expect(direct.reqs.map((q) => q.method)).toEqual(['POST']);
  });

  it('keeps the classification of failures on the POST alone: busy, auth, not found, unreachable', async () => {
    const c = cache('fleet', { authorization: 'Bearer tok-123' });
    await c.lookRemote();
    server.cannedAnswers.push({ status: 503, headers: { 'retry-after': '60' } });
    const busy = await failure(c.lookRemote());
    expect(busy).toBeInstanceOf(GitServerBusyError);
    expect(busy).toMatchObject({ code: 'KS_GIT_SERVER_BUSY', status: 503, retryAfter: '60' });

    server.token = 'another';
    const auth = await served(() => codeOf(c.lookRemote()));
    expect(auth.value).toBe('KS_GIT_AUTH_FAILED');
    expect(auth.reqs).toHaveLength(1);
    server.token = undefined;

    // A repository gone: the POST's 404 is not taken for "unsupported" for good; the discovery names it.
    server.cannedAnswers.push(
      { status: 404, when: (q) => q.method === 'POST' },
      { status: 404, when: (q) => q.method === 'GET' },
    );
    expect(await codeOf(c.lookRemote())).toBe('KS_GIT_REPO_NOT_FOUND');
    const back = await served(() => c.lookRemote());
    expect(back.reqs.map((q) => q.method)).toEqual(['POST']);

    await server.stop();
    try {
      expect(await codeOf(c.lookRemote())).toBe('KS_GIT_UNREACHABLE');
    } finally {
      await server.start();
    }
    expect(await c.lookRemote()).toBe(main);
  });
});

/** An HTTP proxy to the Git server that drops the Git-Protocol header, as some proxies do: git then speaks v0. */
async function headerDroppingProxy(port: number): Promise<Server> {
  const proxy = createServer((req, res) => {
    const headers = { ...req.headers };
    delete headers['git-protocol'];
    const up = request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return proxy;
}
