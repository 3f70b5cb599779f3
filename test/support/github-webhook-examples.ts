// GitHub's published example webhook payloads (the `@octokit/webhooks-examples` package, collected from real
// deliveries), and deliveries of them as GitHub makes one: the JSON bytes, signed with the hook's secret
// (X-Hub-Signature-256), the event name in X-GitHub-Event.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { githubSignature } from '../../src/api/github-webhook.js';

export type Payload = Record<string, unknown>;

interface Definition {
  name: string;
  examples: Payload[];
}

const require = createRequire(import.meta.url);

/** event name → its examples, for github.com or one of the GitHub Enterprise Server releases the package has. */
export function webhookExamples(
  host: 'api.github.com' | 'ghes-31' | 'ghes-32' | 'ghes-33' | 'ghes-34' | 'ghes-35' = 'api.github.com',
): Map<string, Payload[]> {
  const file = require.resolve(`@octokit/webhooks-examples/${host}/index.json`);
  const defs = JSON.parse(readFileSync(file, 'utf8')) as Definition[];
  return new Map(defs.map((d) => [d.name, d.examples]));
}

/** The examples of `event` on github.com; throws when the package has none (a new release renamed something). */
export function examplesOf(event: string): Payload[] {
  const list = webhookExamples().get(event);
  if (!list?.length) throw new Error(`@octokit/webhooks-examples has no example of ${event}`);
  return list;
}

/** The first push example matching `pred` (ref, created, deleted…), deep-copied so that a test may adjust it. */
export function pushExample(pred: (p: Payload) => boolean): Payload {
  const p = examplesOf('push').find(pred);
  if (!p) throw new Error('no push example matches');
  return structuredClone(p);
}

export interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** `payload` as GitHub delivers it: JSON (or form-encoded in `payload=`), signed with `secret`, or with `signature`. */
export function delivery(
  event: string,
  payload: Payload,
  o: { secret: string; signature?: string; form?: boolean },
): Delivery {
  const json = JSON.stringify(payload);
  const body = o.form ? new URLSearchParams({ payload: json }).toString() : json;
  return {
    body,
    headers: {
      'content-type': o.form ? 'application/x-www-form-urlencoded' : 'application/json',
      'x-github-event': event,
      'x-github-delivery': crypto.randomUUID(),
      'x-hub-signature-256': o.signature ?? githubSignature(o.secret, body),
      'user-agent': 'GitHub-Hookshot/044aadd',
    },
  };
}

/** The example's commit fields pointed at real commits (`before` → `after`), as GitHub would fill them in. */
export function withCommits(p: Payload, before: string, after: string): Payload {
  const out = structuredClone(p);
  out.before = before;
  out.after = after;
  const head = out.head_commit as Payload | null;
  if (head) head.id = after;
  const commits = out.commits as Payload[];
  if (commits.length > 0) commits[commits.length - 1]!.id = after;
  return out;
}
