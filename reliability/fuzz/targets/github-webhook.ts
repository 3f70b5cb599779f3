// GitHub webhook deliveries (src/api/github-webhook.ts, its route in routes/sync-routes.ts): the event header, the
// HMAC signature, JSON or form-encoded bodies. Seeds are real payloads from @octokit/webhooks-examples. The harness
// signs each body with the shared secret (so that the payload parser is reached) unless the input brings its own
// X-Hub-Signature-256, and checks the pure parser and the route alike.
import fc from 'fast-check';
import { buildServer, type ApiServer } from '../../../src/api/build-server.js';
import { checkGithubSignature, githubSignature, githubWebhookAction } from '../../../src/api/github-webhook.js';
import { holds, text, type FuzzTarget } from '../fuzz-target.js';
import { checkResponse, decodeRequest, inject, standInAgent } from '../http-request.js';

const SECRET = 'webhook-secret-for-fuzzing';
let server: ApiServer | undefined;

/** Deliveries of push-like payloads: every event, ref shapes, `after` of any type, JSON or form-encoded, signed or not. */
const structured = fc
  .tuple(
    fc.constantFrom('push', 'ping', 'create', '', 'PUSH'),
    fc.record(
      {
        ref: fc.oneof(
          fc.constantFrom('refs/heads/main', 'main', 'refs/tags/main', 'refs/heads/main2', '', 'refs/heads/'),
          fc.integer(),
          fc.constant(null),
        ),
        after: fc.oneof(fc.constantFrom('a'.repeat(40), '0'.repeat(40), ''), fc.integer(), fc.constant([])),
        before: fc.constant('0'.repeat(40)),
      },
      { requiredKeys: [] },
    ),
    fc.constantFrom(
      'application/json',
      'application/x-www-form-urlencoded',
      'APPLICATION/JSON; charset=utf-8',
      'text/plain',
      '',
    ),
    fc.constantFrom('', 'sha256=' + '0'.repeat(64), 'sha1=abc', 'sha256=xyz'),
  )
  .map(([event, payload, type, sig]) => {
    const json = JSON.stringify(payload);
    const body = type.startsWith('application/x-www') ? `payload=${encodeURIComponent(json)}` : json;
    const headers = [
      `x-github-event: ${event}`,
      ...(type ? [`content-type: ${type}`] : []),
      ...(sig ? [`x-hub-signature-256: ${sig}`] : []),
    ];
    return text(`POST /v1/webhooks/github\n${headers.join('\n')}\n\n${body}`);
  });

export const githubWebhook: FuzzTarget = {
  name: 'github-webhook',
  parses: 'githubWebhookAction, checkGithubSignature and POST /v1/webhooks/github (src/api/github-webhook.ts)',
  maxBytes: 16 * 1024,
  testRuns: 400,
  dictionary: [
    '"ref":',
    '"after":',
    '"refs/heads/main"',
    'refs/tags/',
    '\nx-github-event: push',
    '\nx-github-event: ping',
    '\ncontent-type: application/x-www-form-urlencoded',
    'payload=',
    '%7B',
    '\\u0000',
    '{',
    '}',
    '[',
    ']',
  ],
  structured,
  async setup() {
    server = buildServer({ agent: standInAgent(), token: 'f'.repeat(64), webhook: { secret: SECRET, ref: 'main' } });
  },
  async teardown() {
    await server?.close();
    server = undefined;
  },
  async check(input) {
    if (!server) await this.setup!();
    const req = decodeRequest(input);
    req.method = 'POST';
    req.url = '/v1/webhooks/github';
    if (!('x-hub-signature-256' in req.headers)) req.headers['x-hub-signature-256'] = githubSignature(SECRET, req.body);
    const action = githubWebhookAction(req.headers['x-github-event'], req.body, req.headers['content-type'], 'main');
    holds(['pong', 'sync', 'ignored', 'bad-payload'].includes(action.kind), `action ${JSON.stringify(action)}`);
    if (action.kind === 'bad-payload')
      holds(/^KS_/.test(action.code), `bad payload without a code: ${JSON.stringify(action)}`);
    if (action.kind === 'sync')
      holds(action.ref === 'refs/heads/main' && typeof action.after === 'string', `sync ${JSON.stringify(action)}`);
    holds(
      ['ok', 'missing', 'invalid'].includes(checkGithubSignature(req.headers['x-hub-signature-256'], SECRET, req.body)),
      'signature check',
    );
    return checkResponse(await inject(server!, req), req);
  },
};
