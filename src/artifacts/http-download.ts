// Opens an artifact download over HTTP(S) with node:http/https: bounded redirects, never from https down to http,
// and an inactivity timeout that also covers a body that stops arriving.
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { ArtifactError } from './artifact-error.js';
import { redactUri } from './artifact-source.js';

/** Redirects followed before giving up: enough for a CDN hop or two, not for a loop. */
export const MAX_REDIRECTS = 5;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** An open 2xx response: read `body`; `total` is the announced length, used for progress only. */
export interface HttpBody {
  body: IncomingMessage;
  total: number | undefined;
  url: URL;
}

/**
 * GETs `url`, following redirects, and returns the final response unread. A Content-Length over `maxBytes`
 * fails at once; the caller must still count the bytes, since the header may lie or be absent.
 */
export async function openHttpBody(url: URL, opts: { maxBytes: number; timeoutMs: number }): Promise<HttpBody> {
  const original = url;
  for (let hop = 0; ; hop++) {
    const res = await requestOnce(url, opts.timeoutMs);
    const status = res.statusCode ?? 0;
    if (REDIRECT_STATUSES.has(status)) {
      res.destroy();
      const location = res.headers.location;
      if (hop >= MAX_REDIRECTS) throw fetchFailed(original, `more than ${MAX_REDIRECTS} redirects`);
      if (location === undefined) throw fetchFailed(url, `HTTP ${status} redirect without a Location`, status);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw fetchFailed(url, `HTTP ${status} redirect to an invalid Location "${location}"`, status);
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:')
        throw fetchFailed(url, `refusing a redirect to ${next.protocol} (only http and https)`, status);
      if (url.protocol === 'https:' && next.protocol === 'http:')
        throw fetchFailed(url, `refusing a redirect from https to http (${redactUri(next.toString())})`, status);
      url = next;
      continue;
    }
    if (status < 200 || status > 299) {
      res.destroy();
      throw fetchFailed(url, `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}`, status);
    }
    const header = res.headers['content-length'];
    const total = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
    if (total !== undefined && total > opts.maxBytes) {
      res.destroy();
      throw new ArtifactError('KS_ARTIFACT_TOO_LARGE', `${redactUri(url.toString())} announces ${total} bytes, over the limit of ${opts.maxBytes}`, {
        uri: redactUri(url.toString()),
        limit: opts.maxBytes,
        received: total,
      });
    }
    return { body: res, total, url };
  }
}

function requestOnce(url: URL, timeoutMs: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? https.get : http.get;
    let response: IncomingMessage | undefined;
    // No Accept-Encoding: the signed digest is over the bytes as published, not a re-encoding of them.
    const req = get(url, { headers: { 'user-agent': 'keystone', accept: '*/*' } }, (res) => {
      response = res;
      resolve(res);
    });
    // Socket inactivity, before and after the headers: a stalled body fails the read in progress.
    req.setTimeout(timeoutMs, () => {
      const err = fetchFailed(url, `no data for ${timeoutMs} ms`);
      if (response) response.destroy(err);
      req.destroy(err);
    });
    req.on('error', (err) => reject(err instanceof ArtifactError ? err : fetchFailed(url, err.message)));
  });
}

function fetchFailed(url: URL, why: string, status?: number): ArtifactError {
  const uri = redactUri(url.toString());
  return new ArtifactError('KS_ARTIFACT_FETCH_FAILED', `fetching ${uri} failed: ${why}`, status === undefined ? { uri } : { uri, status });
}
