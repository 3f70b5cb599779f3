// Commit statuses through the GitHub REST API (`POST /repos/{owner}/{repo}/statuses/{sha}`), which Gitea and
// Forgejo serve too under `/api/v1`: the API base is taken as the whole prefix so one reporter fits all three.
// Failures are classified by HTTP status for the outbox: 5xx, 408, 429 and network errors are retried; other 4xx
// are permanent (sending the same request again gets the same 422 or 404).
import { checkStatus, httpDeliveryError, StatusDeliveryError, type CommitStatus, type StatusReporter } from './commit-status.js';

export interface GitHubStatusReporterOptions {
  /** The API prefix: `https://api.github.com` (default), `https://ghe.example/api/v3`, `https://gitea.example/api/v1`. */
  apiBase?: string;
  owner: string;
  repo: string;
  /** A token allowed to write commit statuses (GitHub: `repo:status`, or fine-grained "Commit statuses: write"). */
  token: string;
  /** Per request; default 10 s. A hung server must not hold up the outbox forever. */
  timeoutMs?: number;
  userAgent?: string;
  /** The outbox key; default `github`. Two reporters to two hosts need two names. */
  name?: string;
}

export const GITHUB_API = 'https://api.github.com';
const DEFAULT_TIMEOUT_MS = 10_000;
/** Enough of an error body to say what was wrong, not enough to flood the log. */
const MAX_DETAIL = 300;

export class GitHubStatusReporter implements StatusReporter {
  readonly name: string;
  private readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly userAgent: string;

  constructor(private readonly opts: GitHubStatusReporterOptions) {
    this.name = opts.name ?? 'github';
    this.base = (opts.apiBase ?? GITHUB_API).replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.userAgent = opts.userAgent ?? 'keystone-agent';
    if (!opts.owner || !opts.repo) throw new Error('GitHubStatusReporter needs an owner and a repo');
  }

  /** The endpoint for one commit. */
  statusUrl(commit: string): string {
    return `${this.base}/repos/${encodeURIComponent(this.opts.owner)}/${encodeURIComponent(this.opts.repo)}/statuses/${commit}`;
  }

  async deliver(s: CommitStatus): Promise<void> {
    checkStatus(s);
    const url = this.statusUrl(s.commit);
    const what = `GitHub status for ${s.commit.slice(0, 12)} (${this.redact(url)})`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.token}`,
          accept: 'application/vnd.github+json',
          'x-github-api-version': '2022-11-28',
          'content-type': 'application/json',
          'user-agent': this.userAgent,
        },
        body: JSON.stringify({ state: s.state, ...(s.targetUrl !== undefined && { target_url: s.targetUrl }), description: s.description, context: s.context }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      const timedOut = (e as Error).name === 'TimeoutError';
      const why = timedOut ? `no answer within ${this.timeoutMs} ms` : describeNetworkError(e);
      throw new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${this.redact(why)}`, {}, { cause: e });
    }
    const body = await res.text().catch(() => '');
    if (res.ok) return;
    // GitHub's rate limits answer 403 (or 429) with the reset time: that is a "later", not a "never".
    if (res.status === 403 && res.headers.get('x-ratelimit-remaining') === '0') {
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      const retryAfterMs = Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - Date.now()) : undefined;
      throw new StatusDeliveryError('KS_STATUS_SERVER_ERROR', `${what}: rate limited (HTTP 403)`, { httpStatus: 403, ...(retryAfterMs !== undefined && { retryAfterMs }) });
    }
    throw httpDeliveryError(what, res.status, this.redact(errorDetail(body)), retryAfter(res.headers.get('retry-after')));
  }

  /** The token never reaches a message, even if a server echoes it. */
  private redact(text: string): string {
    return this.token ? text.split(this.token).join('***') : text;
  }
}

/** `message` and the validation `errors` of a GitHub error body, or the start of a non-JSON one. */
function errorDetail(body: string): string {
  try {
    const j = JSON.parse(body) as { message?: unknown; errors?: unknown };
    const parts = typeof j.message === 'string' ? [j.message] : [];
    if (Array.isArray(j.errors))
      for (const e of j.errors as unknown[]) {
        if (typeof e === 'string') parts.push(e);
        else if (e && typeof e === 'object') {
          const o = e as { field?: unknown; message?: unknown; code?: unknown };
          parts.push([o.field, o.message ?? o.code].filter((x) => typeof x === 'string').join(': '));
        }
      }
    if (parts.length) return parts.join('; ').slice(0, MAX_DETAIL);
  } catch {
    // not JSON: fall through to the raw text
  }
  return body.replace(/\s+/g, ' ').trim().slice(0, MAX_DETAIL);
}

/** Retry-After in seconds (the HTTP-date form is rare for APIs and ignored). */
function retryAfter(v: string | null): number | undefined {
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim()) * 1000;
}

function describeNetworkError(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}

/**
 * owner and repo from a remote URL such as `https://github.com/acme/fleet.git` or `git@github.com:acme/fleet.git`,
 * so the agent can report on the repository it follows without a second setting.
 */
export function ownerRepoFromUrl(remote: string): { owner: string; repo: string } | undefined {
  const m = /^(?:[a-z+]+:\/\/[^/]+\/|[^@/]+@[^:]+:)(?:.*\/)?([^/]+)\/([^/]+?)(?:\.git)?\/?$/i.exec(remote.trim());
  return m?.[1] && m[2] ? { owner: m[1], repo: m[2] } : undefined;
}
