// The HTTP side of a receive-pack push: one request, following redirects with the same method and body, its status
// and content type checked, every failure a coded StatusDeliveryError. Apart from receive-pack-push.ts, which keeps
// what Git says (the commands, the pack, the report) and leaves the wire to this.
import { request as httpRequest, type Agent, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StatusDeliveryError, httpDeliveryError } from './commit-status.js';
import { gitHttpAgent } from '../git/git-http-agent.js';
import { MAX_RETRY_AFTER_MS, retryAfterMs } from '../git/git-poll-delay.js';

export interface ReceivePackOptions {
  /** The repository URL, e.g. https://git.example.com/fleet.git (the service path is appended). */
  url: string;
  /** Sent with every request, e.g. `authorization`; dropped on a redirect to another host. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** The connection pool; default the Git client's own (git-http-agent.ts). */
  agent?: Agent;
}

const MAX_REDIRECTS = 5;

/**
 * One request, following redirects (a renamed repository) with the same method and body: a push has no advertisement
 * GET to take the redirect for it. The credentials go only to the host they were given for.
 */
export async function send(
  opts: ReceivePackOptions,
  url: string,
  method: 'GET' | 'POST',
  extra: Record<string, string>,
  body: Buffer | undefined,
  what: string,
): Promise<IncomingMessage> {
  let target = new URL(url);
  const origin = target.host;
  for (let hop = 0; ; hop++) {
    const headers: OutgoingHttpHeaders = {
      'user-agent': 'git/keystone',
      ...(target.host === origin ? opts.headers : {}),
      ...extra,
    };
    if (body) headers['content-length'] = body.length;
    const res = await requestOnce(target, method, headers, body, opts, what);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if ([301, 302, 303, 307, 308].includes(status) && location && hop < MAX_REDIRECTS) {
      res.resume();
      target = new URL(location, target);
      if (target.protocol !== 'http:' && target.protocol !== 'https:')
        throw new StatusDeliveryError('KS_STATUS_REJECTED', `${what}: redirected to a ${target.protocol} URL`);
      continue;
    }
    if (status < 200 || status > 299) {
      res.resume();
      const after = status === 429 || status === 503 ? retryAfterMs(header(res, 'retry-after'), Date.now()) : undefined;
      throw httpDeliveryError(
        what,
        status,
        res.statusMessage ?? '',
        after === undefined ? undefined : Math.min(after, MAX_RETRY_AFTER_MS),
      );
    }
    return res;
  }
}

function requestOnce(
  target: URL,
  method: string,
  headers: OutgoingHttpHeaders,
  body: Buffer | undefined,
  opts: ReceivePackOptions,
  what: string,
): Promise<IncomingMessage> {
  const signal = opts.signal;
  if (signal?.aborted) return Promise.reject(aborted(signal, what));
  return new Promise((resolve, reject) => {
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(
      target,
      { method, headers, agent: opts.agent ?? gitHttpAgent(target.href), ...(signal && { signal }) },
      resolve,
    );
    req.on('error', (e: Error & { code?: string }) => {
      if (signal?.aborted) reject(aborted(signal, what));
      else
        reject(new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${e.code ?? e.message}`, {}, { cause: e }));
    });
    req.end(body);
  });
}

export function aborted(signal: AbortSignal, what: string): Error {
  return signal.reason instanceof StatusDeliveryError
    ? signal.reason
    : new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: aborted`);
}

function header(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A server that does not speak smart HTTP (a dumb server, a login page) answers 200 with something else. */
export function expectType(res: IncomingMessage, type: string, what: string): void {
  const got = (header(res, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (got === type) return;
  res.resume();
  throw new StatusDeliveryError(
    'KS_STATUS_REJECTED',
    `${what}: the server answered ${got || 'without a content type'}, not ${type} (not a Git smart-HTTP server?)`,
  );
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
