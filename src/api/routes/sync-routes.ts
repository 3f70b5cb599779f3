// POST /v1/sync (look for a new revision now; with wait=done, answer with what became of it) and
// POST /v1/webhooks/github (GitHub says the followed branch moved).
import type { ApiRouter } from '../api-router.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import {
  checkGithubSignature,
  GITHUB_WEBHOOK_BODY_LIMIT,
  GITHUB_WEBHOOK_PATH,
  githubWebhookAction,
} from '../github-webhook.js';
import { parseTimeout, strictQuery } from '../query-params.js';
import { sourceOf } from '../request-guard.js';
import { historyMark, syncOutcome } from '../sync-outcome.js';

const UNAVAILABLE = 'this agent has no source that can look for a revision on demand';

export function registerSyncRoutes(server: ApiRouter, ctx: ApiContext): void {
  server.post('/v1/sync', async (request, reply) => {
    const q = strictQuery(request.query, ['wait', 'timeout', 'now']);
    if (q.wait !== undefined && q.wait !== 'none' && q.wait !== 'done')
      throw new ApiError(400, 'KS_BAD_QUERY', `wait must be done or none, not ${JSON.stringify(q.wait)}`);
    if (q.now !== undefined && q.now !== 'true')
      throw new ApiError(400, 'KS_BAD_QUERY', `now must be true, not ${JSON.stringify(q.now)}`);
    // SPEC §19: the revision waiting for its maintenance window goes now (an operator's word; update locks still hold),
    // once the look is under way (a 503 must not follow a change already made).
    const goNow = () => {
      const now = q.now === 'true' ? ctx.agent.goNow?.() : undefined;
      if (now !== undefined)
        ctx.log?.info({ revision: now }, 'sync --now: the revision waiting for its maintenance window goes now');
    };
    const timeout = parseTimeout(q.timeout);
    if (q.wait !== 'done') {
      if (!ctx.agent.sync()) throw new ApiError(503, 'KS_SYNC_UNAVAILABLE', UNAVAILABLE);
      goNow();
      // Accepted, not done: the look runs in the background and a new revision goes through the agent's loop.
      return reply.code(202).send({ sync: 'requested' });
    }
    if (!ctx.agent.syncSettled)
      throw new ApiError(501, 'KS_NOT_IMPLEMENTED', 'this agent cannot wait for a look: POST /v1/sync without wait');
    const mark = historyMark(ctx.agent);
    const settled = ctx.agent.syncSettled();
    if (!settled) throw new ApiError(503, 'KS_SYNC_UNAVAILABLE', UNAVAILABLE);
    goNow();
    // Waiting never cancels: the look and what it found carry on whatever happens to this call.
    const w = await ctx.waits.wait(settled, timeout.ms);
    if (w.kind === 'closing')
      throw new ApiError(
        503,
        'KS_SHUTTING_DOWN',
        'the agent is shutting down: the look was asked for, its outcome was not waited for',
      );
    if (w.kind !== 'done')
      throw new ApiError(
        504,
        'KS_WAIT_TIMEOUT',
        `the look and what it found did not finish within ${timeout.text}; they go on in the agent`,
        { timeout: timeout.text },
      );
    const outcome = syncOutcome(ctx.agent, mark, w.result.lookFailed);
    if (!outcome)
      throw new ApiError(
        502,
        'KS_SYNC_FAILED',
        `looking at the source failed: ${w.result.lookFailed}; the device keeps what it runs`,
      );
    return outcome;
  });

  // The signature covers the exact bytes GitHub sent: the body reaches the handler unparsed. Form-encoded is GitHub's
  // default for a new hook; it is safe to take here (a browser form could send it cross-origin, but it cannot sign
  // it, and the guard still refuses foreign Origins). Every other route takes parsed JSON only.
  server.post(
    GITHUB_WEBHOOK_PATH,
    { limit: GITHUB_WEBHOOK_BODY_LIMIT, raw: ['application/json', 'application/x-www-form-urlencoded'] },
    async (request, reply) => {
      const hook = ctx.webhook;
      if (!hook)
        throw new ApiError(
          503,
          'KS_WEBHOOK_DISABLED',
          'webhooks are off on this agent (no webhook secret is configured); POST /v1/sync looks for a revision now',
        );
      strictQuery(request.query, []);
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const check = checkGithubSignature(
        request.headers['x-hub-signature-256'] as string | undefined,
        hook.secret,
        body,
      );
      if (check !== 'ok') {
        // Nothing about the secret or the expected value: which of the two failed is all a sender may learn.
        ctx.refusals.refused(
          sourceOf(request),
          'KS_WEBHOOK_SIGNATURE',
          { path: GITHUB_WEBHOOK_PATH, delivery: request.headers['x-github-delivery'], check },
          'webhook refused: bad signature',
        );
        throw new ApiError(
          401,
          'KS_WEBHOOK_SIGNATURE',
          check === 'missing'
            ? 'send X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body with the webhook secret>'
            : 'X-Hub-Signature-256 does not match the body and the webhook secret',
        );
      }
      const action = githubWebhookAction(
        request.headers['x-github-event'] as string | undefined,
        body,
        request.headers['content-type'],
        hook.ref,
      );
      switch (action.kind) {
        case 'bad-payload':
          throw new ApiError(400, action.code, action.message);
        case 'pong':
          return reply.code(200).send({ pong: true });
        case 'ignored':
          return reply.code(202).send({
            ignored: action.reason,
            event: action.event,
            ...(action.ref !== undefined && { ref: action.ref }),
          });
        case 'sync':
          if (!ctx.agent.sync()) throw new ApiError(503, 'KS_SYNC_UNAVAILABLE', UNAVAILABLE);
          ctx.log?.info(
            { ref: action.ref, after: action.after, delivery: request.headers['x-github-delivery'] },
            'webhook: the followed ref moved, looking for a revision now',
          );
          // As POST /v1/sync: the look runs in the background; `after` is what GitHub saw, not necessarily what gets applied.
          return reply.code(202).send({ sync: 'requested', ref: action.ref, after: action.after });
      }
    },
  );
}
