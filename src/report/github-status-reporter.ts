// Commit statuses through the GitHub REST API (`POST /repos/{owner}/{repo}/statuses/{sha}`), which Gitea and
// Forgejo serve too under `/api/v1`: the API base is taken as the whole prefix so one reporter fits all three.
// Failures are classified by HTTP status for the outbox: 5xx, 408 and network errors are retried; rate limits
// (429, and GitHub's 403 flavours of it) are retried after the wait the server asked for; other 4xx are permanent
// (sending the same request again gets the same 422 or 404). At fleet scale see docs/fleet-reports.md.
import { backoffMs } from '../core/backoff.js';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { retryAfterMs } from '../git/git-poll-delay.js';
import {
  checkStatus,
  httpDeliveryError,
  StatusDeliveryError,
  type CommitStatus,
  type StatusReporter,
} from './commit-status.js';

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
  /**
   * Least time between the starts of two requests of this reporter; default 1 s, i.e. at most 60 a minute, under
   * GitHub's ~80 content-creating requests a minute per token. 0 turns pacing off.
   */
  minIntervalMs?: number;
  /** ms wall clock for x-ratelimit-reset and HTTP-date Retry-After; default Date.now. */
  now?: () => number;
  /**
   * ms monotonic clock for pacing; default performance.now. Not the wall clock: a clock stepped back by NTP (or set
   * from 1970 at boot) would otherwise hold every status for as long as the step.
   */
  elapsed?: () => number;
  /** Waits for pacing; default a timer. Injected so tests pace without sleeping. */
  sleep?: (ms: number) => Promise<void>;
}

export const GITHUB_API = 'https://api.github.com';
const DEFAULT_TIMEOUT_MS = 10_000;
/** Enough of an error body to say what was wrong, not enough to flood the log. */
const MAX_DETAIL = 300;
export const DEFAULT_MIN_INTERVAL_MS = 1_000;
/** GitHub's secondary rate limit message (and its older "abuse detection" wording), for a 403 without Retry-After. */
const SECONDARY_LIMIT_RE = /secondary rate limit|abuse detection/i;
/** GitHub's docs for a rate limit answer with no time in it: wait at least a minute, and longer on each repeat. */
export const RATE_LIMIT_FALLBACK_MS = 60_000;
/** The repeat doubling stops here; the outbox caps any wait at its maxBackoffMs anyway. */
const MAX_RATE_LIMIT_FALLBACK_MS = 16 * 60_000;

export class GitHubStatusReporter implements StatusReporter {
  readonly name: string;
  private readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly minIntervalMs: number;
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** When the next request may start (pacing). */
  private nextSlot = Number.NEGATIVE_INFINITY;
  /** Rate limit answers in a row that named no time: each doubles the fallback wait; a delivery resets it. */
  private untimedLimits = 0;

  constructor(private readonly opts: GitHubStatusReporterOptions) {
    this.name = opts.name ?? 'github';
    this.base = (opts.apiBase ?? GITHUB_API).replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.userAgent = opts.userAgent ?? 'keystone-agent';
    this.minIntervalMs = Math.max(0, opts.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS);
    this.now = opts.now ?? Date.now;
    this.elapsed = opts.elapsed ?? (() => performance.now());
    this.sleep = opts.sleep ?? ((ms) => sleepMs(ms));
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
    await this.pace();
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
        body: JSON.stringify({
          state: s.state,
          ...(s.targetUrl !== undefined && { target_url: s.targetUrl }),
          description: s.description,
          context: s.context,
        }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      const timedOut = (e as Error).name === 'TimeoutError';
      const why = timedOut ? `no answer within ${this.timeoutMs} ms` : describeNetworkError(e);
      throw new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${this.redact(why)}`, {}, { cause: e });
    }
    const body = await res.text().catch(() => '');
    if (res.ok) {
      this.untimedLimits = 0;
      return;
    }
    const detail = this.redact(errorDetail(body));
    const limitedFor = this.rateLimitWait(res, body);
    if (limitedFor !== undefined)
      throw new StatusDeliveryError(
        'KS_STATUS_RATE_LIMITED',
        `${what}: rate limited (HTTP ${res.status})${detail ? `: ${detail}` : ''}; retry in ${Math.ceil(limitedFor / 1000)} s`,
        {
          httpStatus: res.status,
          retryAfterMs: limitedFor,
        },
      );
    throw httpDeliveryError(
      what,
      res.status,
      detail,
      retryAfterMs(res.headers.get('retry-after') ?? undefined, this.now()),
    );
  }

  /**
   * How long GitHub asked us to wait, or undefined when the answer is not a rate limit. A 403 is one when it says
   * so: Retry-After, x-ratelimit-remaining 0, or the secondary limit message; any other 403 (a token without
   * statuses:write) stays a permanent KS_STATUS_AUTH. The order is GitHub's documented one.
   */
  private rateLimitWait(res: Response, body: string): number | undefined {
    const h = res.headers;
    const after = retryAfterMs(h.get('retry-after') ?? undefined, this.now());
    const primary = h.get('x-ratelimit-remaining') === '0';
    const limited =
      res.status === 429 || (res.status === 403 && (after !== undefined || primary || SECONDARY_LIMIT_RE.test(body)));
    if (!limited) return undefined;
    if (after !== undefined) return after;
    const reset = Number(h.get('x-ratelimit-reset'));
    if (primary && Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1000 - this.now());
    const wait = backoffMs(this.untimedLimits, { baseMs: RATE_LIMIT_FALLBACK_MS, capMs: MAX_RATE_LIMIT_FALLBACK_MS });
    this.untimedLimits++;
    return wait;
  }

  /** Takes the next request slot (synchronously, so concurrent calls queue) and waits for it. */
  private async pace(): Promise<void> {
    if (this.minIntervalMs === 0) return;
    const now = this.elapsed();
    const at = Math.max(now, this.nextSlot);
    this.nextSlot = at + this.minIntervalMs;
    if (at > now) await this.sleep(at - now);
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
