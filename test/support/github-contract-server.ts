// A local stand-in for the GitHub commit status API, written from GitHub's documentation rather than from our
// client, so the reporter is tested against the contract and not against itself:
//   POST /repos/{owner}/{repo}/statuses/{sha}        201 with the created status; 401 Bad credentials; 422 Validation Failed
//   GET  /repos/{owner}/{repo}/commits/{ref}/statuses  the statuses of a commit, newest first
// An optional path prefix (`/api/v1`) plays Gitea/Forgejo. Test hooks: fail the next N requests with 503,
// stop and start on the same port (a server that goes away), and a log of every request with its headers and body.
// `rateLimit` plays GitHub's rate limit answers as its docs describe them (rate-limits-for-the-rest-api): a secondary
// limit is 403 or 429 with "You have exceeded a secondary rate limit" and maybe Retry-After; a primary one is 403
// with x-ratelimit-remaining 0 and x-ratelimit-reset in epoch seconds.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackHttpServer } from '../../src/dev/loopback-http-server.js';

export interface ContractStatus {
  id: number;
  url: string;
  state: string;
  description: string | null;
  target_url: string | null;
  context: string;
  created_at: string;
  updated_at: string;
}

export interface ContractRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface GitHubContractServerOptions {
  token: string;
  /** `''` for GitHub, `/api/v1` for Gitea/Forgejo. */
  prefix?: string;
  /** Clock for created_at; default Date.now. */
  now?: () => number;
  /** GitHub keeps at most 1000 statuses per commit and context and answers 422 beyond; lower it to test that. */
  maxStatusesPerContext?: number;
}

export type RateLimitAnswer =
  | { kind: 'secondary'; status?: 403 | 429; retryAfter?: string; message?: string }
  | { kind: 'primary'; resetEpochSeconds: number };

const SECONDARY_MESSAGE =
  'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:1111:2222.';
const DOCS = 'https://docs.github.com/rest/commits/statuses#create-a-commit-status';
const STATES = ['error', 'failure', 'pending', 'success'];

export class GitHubContractServer extends LoopbackHttpServer {
  private nextId = 1;
  /** `owner/repo@sha` → statuses, oldest first. */
  private readonly statuses = new Map<string, ContractStatus[]>();
  readonly requests: ContractRequest[] = [];
  /** The next this-many requests answer 503 (then the server behaves again). */
  failNext = 0;
  /** While set, every authenticated POST is answered as over a rate limit, and nothing is stored. */
  rateLimit: RateLimitAnswer | undefined;
  token: string;
  /** A token that authenticates but lacks statuses:write: GitHub answers its POST with a plain 403. */
  readOnlyToken = 'read-only-token';
  private readonly prefix: string;
  private readonly now: () => number;
  private readonly maxPerContext: number;

  constructor(opts: GitHubContractServerOptions) {
    super();
    this.token = opts.token;
    this.prefix = opts.prefix ?? '';
    this.now = opts.now ?? Date.now;
    this.maxPerContext = opts.maxStatusesPerContext ?? 1000;
  }

  /** The API base to give a reporter: `http://127.0.0.1:PORT` plus the prefix. */
  get apiBase(): string {
    return `http://127.0.0.1:${this.port}${this.prefix}`;
  }

  /** Forgets every status and request, and behaves again (between tests). */
  reset(): void {
    this.statuses.clear();
    this.requests.length = 0;
    this.failNext = 0;
    this.rateLimit = undefined;
  }

  /** The statuses stored for a commit, newest first (as the GET endpoint lists them). */
  list(owner: string, repo: string, sha: string): ContractStatus[] {
    return [...(this.statuses.get(`${owner}/${repo}@${sha}`) ?? [])].reverse();
  }

  protected async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record: ContractRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      status: 0,
    };
    this.requests.push(record);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      res
        .writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
        .end(JSON.stringify(body));
    };
    if (this.failNext > 0) {
      this.failNext--;
      return send(503, { message: 'Service Unavailable' });
    }
    if (req.headers.authorization === `Bearer ${this.readOnlyToken}` && req.method === 'POST')
      return send(403, {
        message: 'Resource not accessible by personal access token',
        documentation_url: DOCS,
        status: '403',
      });
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return send(401, {
        message: 'Bad credentials',
        documentation_url: 'https://docs.github.com/rest',
        status: '401',
      });
    const limit = this.rateLimit;
    if (limit && req.method === 'POST') {
      const docs = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';
      if (limit.kind === 'primary')
        return send(
          403,
          { message: 'API rate limit exceeded for user ID 1.', documentation_url: docs },
          {
            'x-ratelimit-limit': '5000',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-used': '5000',
            'x-ratelimit-reset': String(limit.resetEpochSeconds),
            'x-ratelimit-resource': 'core',
          },
        );
      return send(
        limit.status ?? 403,
        { message: limit.message ?? SECONDARY_MESSAGE, documentation_url: docs },
        limit.retryAfter !== undefined ? { 'retry-after': limit.retryAfter } : {},
      );
    }
    if (!url.pathname.startsWith(`${this.prefix}/`)) return send(404, { message: 'Not Found' });
    const path = url.pathname.slice(this.prefix.length);
    let m = /^\/repos\/([^/]+)\/([^/]+)\/statuses\/([^/]+)$/.exec(path);
    if (m && req.method === 'POST')
      return this.create(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), m[3]!, record.body, send);
    m = /^\/repos\/([^/]+)\/([^/]+)\/commits\/([^/]+)\/statuses$/.exec(path);
    if (m && req.method === 'GET')
      return send(200, this.list(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), m[3]!));
    return send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
  }

  private create(
    owner: string,
    repo: string,
    sha: string,
    raw: string,
    send: (status: number, body: unknown) => void,
  ): void {
    let body: Record<string, unknown>;
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return send(400, { message: 'Problems parsing JSON', documentation_url: DOCS });
    }
    const invalid = (field: string, message: string) =>
      send(422, {
        message: 'Validation Failed',
        errors: [{ resource: 'Status', code: 'custom', field, message }],
        documentation_url: DOCS,
      });
    if (!/^[0-9a-f]{40}$/i.test(sha))
      return send(422, { message: `No commit found for SHA: ${sha}`, documentation_url: DOCS });
    if (typeof body.state !== 'string' || !STATES.includes(body.state))
      return invalid('state', 'state is not included in the list');
    if (
      body.description !== undefined &&
      body.description !== null &&
      (typeof body.description !== 'string' || [...body.description].length > 140)
    )
      return invalid('description', 'description is too long (maximum is 140 characters)');
    const context = typeof body.context === 'string' ? body.context : 'default';
    const key = `${owner}/${repo}@${sha.toLowerCase()}`;
    const existing = this.statuses.get(key) ?? [];
    if (existing.filter((s) => s.context === context).length >= this.maxPerContext)
      return send(422, {
        message: 'Validation Failed',
        errors: [
          {
            resource: 'Status',
            code: 'custom',
            message: 'This SHA and context has reached the maximum number of statuses.',
          },
        ],
        documentation_url: DOCS,
      });
    const created = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const status: ContractStatus = {
      id: this.nextId++,
      url: `${this.apiBase}/repos/${owner}/${repo}/statuses/${sha}`,
      state: body.state,
      description: typeof body.description === 'string' ? body.description : null,
      target_url: typeof body.target_url === 'string' ? body.target_url : null,
      context,
      created_at: created,
      updated_at: created,
    };
    this.statuses.set(key, [...existing, status]);
    send(201, status);
  }
}

export async function startGitHubContractServer(opts: GitHubContractServerOptions): Promise<GitHubContractServer> {
  const s = new GitHubContractServer(opts);
  await s.start();
  return s;
}
