// GitHub's webhook, as pure functions: the `X-Hub-Signature-256` check over the raw body and what an event asks of
// the agent. No HTTP here, so the route stays a thin shell and these are tested on bytes alone.
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { minLength, object, safeParse } from '../core/valid.js';

/** The one route that authenticates by HMAC instead of the bearer token (the request guard exempts it by this path). */
export const GITHUB_WEBHOOK_PATH = '/v1/webhooks/github';

/** Push payloads list every commit with its files: a large push is hundreds of KiB. Anything above this is refused. */
export const GITHUB_WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** `sha256=<hex>` of the body under the shared secret, exactly as GitHub computes it. */
export function githubSignature(secret: string, body: Uint8Array | string): string {
  return 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
}

export type SignatureCheck = 'ok' | 'missing' | 'invalid';

/**
 * Checks `X-Hub-Signature-256` against the exact bytes received (re-serialised JSON would not match). The header must
 * be `sha256=` and 64 hex digits; the digests are then compared in constant time. Their length is fixed and public,
 * so checking the format first tells an attacker nothing about the secret.
 */
export function checkGithubSignature(header: string | undefined, secret: string, body: Uint8Array): SignatureCheck {
  if (header === undefined || header === '') return 'missing';
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  if (!m) return 'invalid';
  const sent = Buffer.from(m[1]!, 'hex');
  const want = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(sent, want) ? 'ok' : 'invalid';
}

/** What an authenticated delivery asks for. */
export type WebhookAction =
  | { kind: 'pong' }
  | { kind: 'sync'; ref: string; after: string }
  | { kind: 'ignored'; reason: 'other ref' | 'other event' | 'branch deleted'; event: string; ref?: string }
  /** 400: KS_BAD_REQUEST without an event name, KS_BAD_JSON when the body is not JSON, KS_BAD_BODY for a push without its fields. */
  | { kind: 'bad-payload'; code: 'KS_BAD_REQUEST' | 'KS_BAD_JSON' | 'KS_BAD_BODY'; message: string };

/** Only the fields we act on; GitHub adds fields freely, so the rest is not our business. */
const PushPayload = object({
  ref: v.pipe(v.string(), minLength(1)),
  after: v.string(),
  deleted: v.optional(v.boolean()),
});

/** `main` → `refs/heads/main`; a full ref (`refs/heads/x`, `refs/tags/v1`) stays as it is. */
export function fullRef(ref: string): string {
  return ref.startsWith('refs/') ? ref : `refs/heads/${ref}`;
}

/**
 * The body as JSON: `application/json` deliveries are the JSON itself; `application/x-www-form-urlencoded` ones
 * (GitHub's default content type for a new hook) carry it in the `payload` field.
 */
function payloadText(body: Uint8Array, contentType: string | undefined): string | undefined {
  const text = Buffer.from(body).toString('utf8');
  if (contentType !== undefined && /^application\/x-www-form-urlencoded\b/i.test(contentType))
    return new URLSearchParams(text).get('payload') ?? undefined;
  return text;
}

/**
 * Decides what a delivery (already authenticated) means for an agent following `followedRef`. Only a push to that
 * very ref syncs: a push to another branch or a tag cannot change what this device runs. Nor can the deletion of the
 * followed branch (`deleted`, `after` all zeros): there is nothing to fetch, and a look would only fail
 * (KS_GIT_REF_NOT_FOUND) while the device keeps what it runs; it is answered as ignored, and the branch pushed again
 * is an ordinary push.
 */
export function githubWebhookAction(
  event: string | undefined,
  body: Uint8Array,
  contentType: string | undefined,
  followedRef: string,
): WebhookAction {
  if (event === undefined || event === '')
    return { kind: 'bad-payload', code: 'KS_BAD_REQUEST', message: 'the X-GitHub-Event header is missing' };
  const text = payloadText(body, contentType);
  if (text === undefined)
    return {
      kind: 'bad-payload',
      code: 'KS_BAD_BODY',
      message: 'a form-encoded delivery must carry its JSON in the payload field',
    };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { kind: 'bad-payload', code: 'KS_BAD_JSON', message: `the payload is not JSON: ${(e as Error).message}` };
  }
  if (event === 'ping') return { kind: 'pong' };
  if (event !== 'push') return { kind: 'ignored', reason: 'other event', event };
  const push = safeParse(PushPayload, json);
  if (!push.success)
    return {
      kind: 'bad-payload',
      code: 'KS_BAD_BODY',
      message: 'a push payload must have the string fields ref and after',
    };
  const { ref, after, deleted } = push.data;
  if (ref !== fullRef(followedRef)) return { kind: 'ignored', reason: 'other ref', event, ref };
  if (deleted === true || /^0+$/.test(after)) return { kind: 'ignored', reason: 'branch deleted', event, ref };
  return { kind: 'sync', ref, after };
}
