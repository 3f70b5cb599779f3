// Requests the API on node:http must answer as the fastify API did, or better (the review of issue 31): a body cut
// short by a client that goes away is a bad request, never an error line with a stack trace (the webhook and the
// sign-in take bodies without a token); HEAD on a stream answers its headers and frees its slot; a request without
// Host is refused in the API's error shape; a bad path is not echoed at any length.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleeper } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';
import { handWritten, openConnection, rawRequest } from './http-request.js';

describe('API request edges', { timeout: 60_000 }, () => {
  let s: ApiStack;
  let port: number;

  beforeAll(async () => {
    s = await apiStack({ components: () => [sleeper('db')] });
    port = (await s.listen()).port!;
  });
  afterAll(async () => {
    await s?.close();
  });

  const errorLines = () => s.lines.filter((l) => (l.level as number) >= 50);

  it('a body cut short by a client that leaves is no error line, however often', async () => {
    const before = errorLines().length;
    for (let i = 0; i < 5; i++) {
      const c = await openConnection(
        { port },
        'POST /v1/webhooks/github HTTP/1.1\r\nHost: device.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"zen":',
      );
      // Headers and part of the body, then the client is gone (end() sends what was written before it closes).
      c.socket.end();
      await c.ended;
    }
    // Every one of those connections is over once the server counts none.
    const deadline = Date.now() + 10_000;
    while ((await s.server.connections()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(await s.server.connections()).toBe(0);
    expect(errorLines().slice(before)).toEqual([]);
  });

  it('HEAD on the event stream answers its headers and ends, holding no stream slot', async () => {
    for (let i = 0; i < 20; i++) {
      const r = await rawRequest({
        method: 'HEAD',
        port,
        path: '/v1/events',
        headers: { host: 'localhost', ...s.auth() },
      });
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
    }
    // Twenty HEADs later (the limit is 16 streams) a stream still opens.
    const c = await openConnection(
      { port },
      `GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${s.auth().authorization}\r\n\r\n`,
    );
    await until(() => c.received().includes('retry: 3000'), 'the event stream to open');
    c.socket.destroy();
  });

  it('a request without Host is refused in the API error shape', async () => {
    const status = await handWritten(port, 'GET /v1/components HTTP/1.0\r\n\r\n');
    expect(status).toBe('HTTP/1.1 403 Forbidden');
  });

  it('a malformed path is refused without echoing it at length', async () => {
    const r = await rawRequest({
      port,
      path: `/v1/components/%zz${'a'.repeat(5000)}`,
      headers: { host: 'localhost', ...s.auth() },
    });
    expect(r.status).toBe(400);
    expect(r.text).toContain('KS_BAD_PATH');
    expect(r.text.length).toBeLessThan(600);
  });

  it("answers with a Date header in HTTP's form, this second's, written by the API (Node's own goes through Date)", async () => {
    // Node spells the header it writes itself `Date`; the one the API sets, `date`: the raw name tells who wrote it.
    const rawDate = (headers: Record<string, string>) =>
      new Promise<{ status: number; names: string[]; date: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/components', headers }, (res) => {
          res.resume();
          const names = res.rawHeaders.filter((_, i) => i % 2 === 0);
          resolve({ status: res.statusCode!, names, date: String(res.headers.date) });
        });
        req.on('error', reject);
        req.end();
      });
    for (const headers of [
      { host: 'localhost', ...s.auth() },
      { host: 'localhost', ...s.auth(), expect: 'something-else' },
    ]) {
      const r = await rawDate(headers);
      expect(r.status).toBe('expect' in headers ? 417 : 200);
      expect(r.names).toContain('date');
      expect(r.names).not.toContain('Date');
      expect(r.date).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      expect(Math.abs(Date.parse(r.date) - Date.now())).toBeLessThan(60_000);
    }
  });
});
