// An HTTP request as one input: `METHOD URL` on the first line, `name: value` header lines, an empty line, the body.
// Decoded leniently (anything decodes to some request), and sanitised only as far as an HTTP parser in front of
// the API's server would be: a request line and headers that no client could put on the wire are dropped, not sent.
import { EventEmitter } from 'node:events';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import type { ApiServer } from '../../src/api/build-server.js';
import type { AgentEventMap } from '../../src/agent/agent.js';
import type { ApiAgent } from '../../src/api/api-deps.js';
import { inject as httpInject, type InjectResponse } from '../../test/support/http-inject.js';
import { holds } from './fuzz-target.js';

const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);

export interface DecodedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

export function decodeRequest(input: Uint8Array): DecodedRequest {
  const raw = Buffer.from(input);
  const split = raw.indexOf('\n\n');
  const head = raw
    .subarray(0, split < 0 ? raw.length : split)
    .toString('latin1')
    .split('\n');
  const body = split < 0 ? Buffer.alloc(0) : raw.subarray(split + 2);
  const [first = '', ...headerLines] = head;
  const [m = '', ...rest] = first.split(' ');
  const method = (METHODS.has(m.toUpperCase()) ? m.toUpperCase() : 'GET') as string;
  let url = (METHODS.has(m.toUpperCase()) ? rest.join(' ') : first) || '/';
  if (!url.startsWith('/')) url = `/${url}`;
  // What a client can send in a request line: printable ASCII without spaces (the rest percent-encoded).
  url = url.replace(/[^\x21-\x7e]/g, (c) => encodeURIComponent(c).replace(/%25/g, '%'));
  // A client resolves the URL as WHATWG does, where `/\x` starts a host; the guard refuses `\` and `%5C` alike.
  url = url.replace(/\\/g, '%5C');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch {
      continue;
    }
    if (name === 'content-length' || name === 'transfer-encoding') continue; // the client frames the body itself
    headers[name] = value;
  }
  return { method, url, headers, body };
}

/** Any status but a 5xx the API did not mean, and every refusal a JSON error with a KS_ code. */
export function checkResponse(
  res: InjectResponse,
  req: DecodedRequest,
  allowed5xx: readonly number[] = [],
): 'accepted' | 'refused' {
  const what = `${req.method} ${req.url} → ${res.statusCode}`;
  holds(res.statusCode < 500 || allowed5xx.includes(res.statusCode), `${what}: ${res.body.slice(0, 300)}`);
  if (res.statusCode < 400) return 'accepted';
  if (req.method === 'HEAD') return 'refused';
  let code: unknown;
  try {
    code = (JSON.parse(res.body) as { error?: { code?: unknown } }).error?.code;
  } catch {
    holds(false, `${what}: the error body is not JSON: ${res.body.slice(0, 200)}`);
  }
  holds(
    typeof code === 'string' && /^KS_[A-Z0-9_]+$/.test(code),
    `${what}: the error has no KS_ code: ${res.body.slice(0, 200)}`,
  );
  holds(code !== 'KS_INTERNAL', `${what}: KS_INTERNAL: ${res.body.slice(0, 300)}`);
  return 'refused';
}

/** Sent over real HTTP to the server's own loopback listener (test/support/http-inject.ts). */
export async function inject(server: ApiServer, req: DecodedRequest): Promise<InjectResponse> {
  return httpInject(server, {
    method: req.method,
    url: req.url,
    headers: req.headers,
    ...(req.body.length > 0 && { payload: req.body }),
  });
}

/**
 * An agent with no components whose actions answer at once: what the API parses (paths, queries, bodies, headers) is
 * under test, not the engine. A manual apply is accepted and its revision reported refused on the next tick.
 */
export function standInAgent(): ApiAgent {
  const events = new EventEmitter<AgentEventMap>();
  return {
    store: {
      components: () => [],
      component: () => undefined,
      appliedRevision: () => undefined,
      history: () => [],
      historyOf: () => [],
    },
    engine: {
      desired: undefined,
      restartOrders: () => undefined,
      restart: never,
      stop: never,
      start: never,
      pidOf: () => undefined,
      unitsOf: () => undefined,
    },
    events,
    sync: () => true,
    applyManual: (r) => {
      setImmediate(() =>
        events.emit('revision', { revision: r.id, outcome: 'rejected', summary: 'fuzz stand-in' } as never),
      );
      return { revision: r.id, queued: false } as never;
    },
    resume: () => ({ resumed: false }),
    syncState: () => ({ following: 'directory' }) as never,
  } as ApiAgent;
}

function never(): never {
  throw new Error('the stand-in agent has no components: the API must answer 404 before asking it to act');
}
