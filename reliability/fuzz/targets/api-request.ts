// The agent's HTTP API (src/api/: build-server.ts, request-guard.ts, routes/, query-params.ts, component-target.ts):
// request lines, path segments, query strings, headers and JSON bodies from whoever can reach the port. The real
// server from buildServer on a stand-in agent, over real HTTP on loopback; the bearer token is added unless the input
// sets an Authorization header itself.
import fc from 'fast-check';
import { buildServer, type ApiServer } from '../../../src/api/build-server.js';
import { text, type FuzzTarget } from '../fuzz-target.js';
import { checkResponse, decodeRequest, inject, standInAgent } from '../http-request.js';

const TOKEN = 'f'.repeat(64);
let server: ApiServer | undefined;

const path = fc.constantFrom(
  '/v1/components',
  '/v1/components/web',
  '/v1/components/web:restart',
  '/v1/components/app/web:stop',
  '/v1/components/a:b:c',
  '/v1/revision',
  '/v1/history',
  '/v1/sync',
  '/v1/apply',
  '/v1/resume',
  '/v1/policy',
  '/healthz',
  '/metrics',
  '/v1/webhooks/github',
  '/v1/components/%2e%2e',
  '/v1//components',
  '/v1/components/' + 'x'.repeat(200),
);
const query = fc.array(
  fc.tuple(
    fc.constantFrom('dry', 'wait', 'timeout', 'limit', 'x', 'wait', '__proto__', 'constructor'),
    fc.constantFrom(
      'true',
      'false',
      'none',
      'health',
      'started',
      'converged',
      'done',
      '90s',
      '0s',
      '2h',
      '-1s',
      '10',
      '99999999999999999',
      '',
      '%00',
      '%ZZ',
    ),
  ),
  { maxLength: 3 },
);
const body = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    '{}',
    '[]',
    'null',
    '{"files":{},"plan":"plans/a.toml"}',
    '{"files":{"plans/a.toml":"W1tjb21wb25lbnRzXV0K"},"plan":"plans/a.toml","force":true}',
    '{"__proto__":{"x":1}}',
    '{"a":',
    '"x"',
    '1e999',
  ),
  fc.json(),
);
const request = fc
  .tuple(
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'),
    path,
    query,
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      '',
    ),
    body,
    fc.boolean(),
  )
  .map(([m, p, q, ct, b, origin]) => {
    const qs = q.length ? `?${q.map(([k, v]) => `${k}=${v}`).join('&')}` : '';
    const headers = [...(ct ? [`content-type: ${ct}`] : []), ...(origin ? ['origin: http://evil.example'] : [])];
    return text(`${m} ${p}${qs}\n${headers.join('\n')}\n\n${b}`);
  });

export const apiRequest: FuzzTarget = {
  name: 'api-request',
  parses: 'the HTTP API (src/api/): paths, path segments, query strings, headers, JSON bodies',
  maxBytes: 4 * 1024,
  testRuns: 400,
  dictionary: [
    '/v1/components/',
    ':restart',
    ':stop',
    ':start',
    '?wait=',
    '&timeout=',
    '%2e',
    '%2f',
    '%00',
    '..',
    '\nauthorization: Bearer ',
    '\nhost: ',
    '\norigin: ',
    '\ncontent-type: application/json',
    '\n\n{',
    '"files":',
    '"plan":',
  ],
  structured: request,
  async setup() {
    server = buildServer({ agent: standInAgent(), token: TOKEN });
  },
  async teardown() {
    await server?.close();
    server = undefined;
  },
  async check(input) {
    if (!server) await this.setup!();
    const req = decodeRequest(input);
    if (!('authorization' in req.headers)) req.headers.authorization = `Bearer ${TOKEN}`;
    // 501: a wait this agent does not offer; 503: the webhook, which this server was built without.
    return checkResponse(await inject(server!, req), req, [501, 503]);
  },
};
