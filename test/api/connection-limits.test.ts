// Issue 13, finding 8, against a running agent whose limits are made small: connections beyond the cap are closed
// at once and the API answers again once the half-open ones that filled it time out; half-open connections (TCP and
// the Unix socket) and idle kept-alive ones are closed after their timeouts; a restart that waits for health and the
// progress stream of an apply outlive the request timeout; and a client refused hundreds of times leaves two lines
// in the log, the second with the count.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import { buildServer, type ApiServer } from '../../src/api/build-server.js';
import { listenApi } from '../../src/api/listen-api.js';
import { runCtl } from '../support/cli-run.js';
import { sleeper, type ComponentSpec } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';
import { openConnection, type RawConnection } from './http-request.js';

const LIMITS = { maxConnections: 8, headersTimeoutMs: 300, requestTimeoutMs: 400, idleTimeoutMs: 300 };
/** How long the tests wait for a timeout to close something: far beyond the limits, far below node's defaults (60 s and more). */
const DEADLINE_MS = 8_000;

/**
 * Healthy about 1.5 s after each start, well beyond every limit above: it then writes its pid (kept by exec), and the
 * check wants that process alive, so that the file an earlier instance left never passes for the new one.
 */
function slow(): ComponentSpec {
  return {
    name: 'slow',
    version: '1.0.0',
    command: 'sh',
    args: ['-c', 'sleep 1.5; echo $$ > ready; exec sleep 1000'],
    health: {
      check: 'cmd:kill -0 "$(cat ready 2>/dev/null)" 2>/dev/null',
      interval: '100ms',
      timeout: '1s',
      failureThreshold: 100,
    },
  };
}

/** A request line cut short: the headers never end. */
const HALF = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ';
const whole = (path: string, headers = '') =>
  `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${headers}\r\n`;

describe('API connection limits and refusal logs', { timeout: 60_000 }, () => {
  let s: ApiStack;
  let port: number;
  let socketDir: string;
  let socketPath: string;
  let clock = 0;
  let tick: (() => void) | undefined;
  const open: RawConnection[] = [];

  beforeAll(async () => {
    s = await apiStack({
      components: () => [sleeper('db'), slow()],
      api: {
        limits: LIMITS,
        refusalLog: {
          now: () => clock,
          every: (fn) => {
            tick = fn;
            return () => (tick = undefined);
          },
        },
      },
    });
    socketDir = mkdtempSync(join(tmpdir(), 'keystone-api-sock-'));
    socketPath = join(socketDir, 'api.sock');
    port = (await s.listen(socketPath)).port!;
  });
  afterAll(async () => {
    for (const c of open) c.socket.destroy();
    await s?.close();
    if (socketDir) rmSync(socketDir, { recursive: true, force: true });
  });

  const connect = async (text: string, target: { port?: number; socketPath?: string } = { port }) => {
    const c = await openConnection(target, text);
    open.push(c);
    return c;
  };
  const connectionsOf = (server: ApiServer) => server.connections();
  const statusLine = (text: string) => text.split('\r\n', 1)[0];
  /** A normal request on a connection of its own, and its status line ('' when the server closed it unanswered). */
  const request = async (path = '/healthz', headers = '', target: { port: number } = { port }) =>
    statusLine(await (await connect(whole(path, headers), target)).ended);

  it('connections beyond the cap are closed at once; the API answers again once the half-open ones time out', async () => {
    // A server of its own on the same agent, whose header timeout leaves time to fill the cap and try one more.
    const capped = buildServer({
      agent: s.agent,
      token: s.token,
      limits: { ...LIMITS, headersTimeoutMs: 3_000, requestTimeoutMs: 3_000 },
    });
    const listeners = await listenApi(capped, { tcp: { host: '127.0.0.1', port: 0 } });
    const halves: RawConnection[] = [];
    try {
      const target = { port: listeners.port! };
      for (let i = 0; i < LIMITS.maxConnections - 1; i++) halves.push(await connect(HALF, target));
      // Below the cap, half-open connections keep no one out.
      expect(await request('/healthz', '', target)).toBe('HTTP/1.1 200 OK');
      halves.push(await connect(HALF, target));
      const deadline = Date.now() + DEADLINE_MS;
      while ((await connectionsOf(capped)) < LIMITS.maxConnections) {
        if (Date.now() > deadline)
          throw new Error('timed out waiting for the server to hold the half-open connections');
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(halves.some((c) => c.closed())).toBe(false);
      // The cap is reached: one more is closed as soon as it is accepted, unanswered.
      expect(await request('/healthz', '', target)).toBe('');
      // Each half-open one is answered 408 and closed once its headers are overdue…
      await until(
        () => halves.every((c) => c.closed()),
        'the half-open connections to be closed by the header timeout',
        DEADLINE_MS,
      );
      for (const c of halves) expect(statusLine(c.received())).toBe('HTTP/1.1 408 Request Timeout');
      // …and then a client is served again.
      expect(await request('/healthz', '', target)).toBe('HTTP/1.1 200 OK');
    } finally {
      for (const c of halves) c.socket.destroy();
      await listeners.close();
    }
  });

  it('a connection that sends nothing is closed after the header timeout, on TCP and on the Unix socket', async () => {
    const tcp = await connect('');
    const unix = await connect('', { socketPath });
    const unixHalf = await connect(HALF, { socketPath });
    await until(
      () => tcp.closed() && unix.closed() && unixHalf.closed(),
      'silent and half-open connections to be closed',
      DEADLINE_MS,
    );
  });

  it('an idle kept-alive connection is closed after the idle timeout', async () => {
    const c = await connect('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await until(() => c.received().includes('"status":"ok"'), 'the answer');
    // Kept alive by the server (not closed with the answer): what closes it later is the idle timeout.
    expect(c.received().toLowerCase()).toContain('connection: keep-alive');
    await until(() => c.closed(), 'the idle connection to be closed', DEADLINE_MS);
  });

  it('a restart that waits for health answers after longer than the request timeout', async () => {
    // The premise: slow runs (a restart of a component still starting would be another test).
    await until(() => s.agent.store.component('slow')?.state === 'running', 'slow to run');
    const c = await connect(
      `POST /v1/components/slow:restart?wait=health&timeout=30s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer ${s.token}\r\n\r\n`,
    );
    const started = Date.now();
    const answer = await c.ended;
    // The whole answer on a mismatch: a refusal says why (seen once in a full run on a busy machine).
    expect(statusLine(answer), answer).toBe('HTTP/1.1 200 OK');
    expect(answer).toContain('"component":"slow"');
    // The health wait alone (1.5 s) is longer than the request timeout: the answer was not cut by it.
    expect(Date.now() - started).toBeGreaterThan(LIMITS.requestTimeoutMs);
  });

  it('keystonectl apply follows the progress stream to the end, across quiet spells longer than the timeouts', async () => {
    await until(() => s.agent.store.component('slow')?.state === 'running', 'slow to run');
    s.fx.bumpVersion('slow', '1.1.0');
    const started = Date.now();
    const r = await runCtl(
      ['apply', s.fx.plan, '--allow-unsigned', '--agent', `http://127.0.0.1:${port}`, '--token', s.token],
      s.fx.dir,
    );
    // The premise: the new instance's health wait alone is longer than the request timeout.
    expect(Date.now() - started).toBeGreaterThan(LIMITS.requestTimeoutMs);
    expect(r.stderr).not.toContain('KS_AGENT_UNREACHABLE');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('[supervisor] component=slow state=running');
    expect(s.agent.store.component('slow')?.version).toBe('1.1.0');
  });

  it('hundreds of refused requests from one client: the first logged at once, the rest in one line with the count', async () => {
    const refusedLines = () =>
      s.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('API request refused'));
    const before = refusedLines().length;
    for (let i = 0; i < 300; i++)
      expect((await inject(s.server, { method: 'GET', url: '/v1/components' })).statusCode).toBe(401);
    // Over a real connection too: the same source.
    expect(await request('/v1/components')).toBe('HTTP/1.1 401 Unauthorized');
    expect(refusedLines().slice(before)).toEqual([
      expect.objectContaining({
        msg: 'API request refused',
        source: '127.0.0.1',
        code: 'KS_TOKEN_MISSING',
        path: '/v1/components',
      }),
    ]);
    // A minute on (the refusal log's clock), the timer sums up the minute in one line.
    clock += 60_000;
    tick?.();
    expect(
      refusedLines()
        .slice(before)
        .map((l) => l.msg),
    ).toEqual(['API request refused', 'API request refused: 300 more from 127.0.0.1 in the last 60s']);
    expect(refusedLines().at(-1)).toMatchObject({
      level: 40,
      source: '127.0.0.1',
      refused: 300,
      codes: { KS_TOKEN_MISSING: 300 },
    });
  });
});
