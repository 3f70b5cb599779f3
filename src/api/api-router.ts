// The API's routes as a table of method and path pattern (issue 31: fastify and its router cost the agent memory for
// a couple of dozen fixed routes). A pattern is a fixed path or a prefix ending in `/*`, whose rest (decoded) is
// `params['*']`; a GET route answers HEAD too. Exact paths win over prefixes, as they did with find-my-way.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { ApiReply } from './api-reply.js';
import type { BodyOptions } from './request-body.js';

/** A parsed query: a value, or an array when the key repeats (strictQuery refuses those). */
export type Query = Record<string, string | string[]>;

export interface ApiRequest {
  method: string;
  /** As sent, with its query. */
  url: string;
  headers: IncomingHttpHeaders;
  query: Query;
  params: { '*': string };
  body: unknown;
  raw: IncomingMessage;
  /** The pattern of the route found (`/v1/components/*`), undefined when none matched. */
  route: string | undefined;
}

export type RouteHandler = (request: ApiRequest, reply: ApiReply) => Promise<unknown>;
export type RouteOptions = Partial<BodyOptions>;

export interface Route {
  method: string;
  pattern: string;
  options: RouteOptions;
  handler: RouteHandler;
}

export class ApiRouter {
  private readonly exact = new Map<string, Route>();
  private readonly prefixes: Route[] = [];

  get(pattern: string, handler: RouteHandler): void;
  get(pattern: string, options: RouteOptions, handler: RouteHandler): void;
  get(pattern: string, a: RouteOptions | RouteHandler, b?: RouteHandler): void {
    this.add('GET', pattern, a, b);
  }

  post(pattern: string, handler: RouteHandler): void;
  post(pattern: string, options: RouteOptions, handler: RouteHandler): void;
  post(pattern: string, a: RouteOptions | RouteHandler, b?: RouteHandler): void {
    this.add('POST', pattern, a, b);
  }

  delete(pattern: string, handler: RouteHandler): void {
    this.add('DELETE', pattern, handler);
  }

  private add(method: string, pattern: string, a: RouteOptions | RouteHandler, b?: RouteHandler): void {
    const route: Route =
      typeof a === 'function'
        ? { method, pattern, options: {}, handler: a }
        : { method, pattern, options: a, handler: b! };
    if (pattern.endsWith('/*')) this.prefixes.push(route);
    else {
      const key = `${method} ${pattern}`;
      if (this.exact.has(key)) throw new Error(`route ${key} is declared twice`);
      this.exact.set(key, route);
    }
  }

  /** The route for a request, on its decoded path; HEAD is served by the GET route. */
  find(method: string, path: string): { route: Route; rest: string } | undefined {
    const m = method === 'HEAD' ? 'GET' : method;
    const exact = this.exact.get(`${m} ${path}`);
    if (exact) return { route: exact, rest: '' };
    // The longest prefix first (none of the API's overlap today, but a future one must not be shadowed).
    let best: { route: Route; rest: string } | undefined;
    for (const r of this.prefixes) {
      const prefix = r.pattern.slice(0, -1);
      if (r.method === m && path.startsWith(prefix) && (!best || prefix.length > best.route.pattern.length - 1))
        best = { route: r, rest: path.slice(prefix.length) };
    }
    return best;
  }
}

/** The query string as fastify's parser read it: `+` is a space, a repeated key gives an array. */
export function parseQuery(search: string): Query {
  const out: Query = Object.create(null) as Query;
  for (const [k, v] of new URLSearchParams(search)) {
    const had = out[k];
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}
