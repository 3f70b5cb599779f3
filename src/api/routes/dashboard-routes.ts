// GET / and GET /assets/*: the dashboard's page (issue 19), from the package, with no network beyond this listener.
// The guard (request-guard.ts) has already decided who may have which file: the login page for anyone who reaches
// the API, the rest of the code after sign-in.
import type { ApiReply } from '../api-reply.js';
import type { ApiRouter, ApiRequest } from '../api-router.js';
import { ApiError } from '../api-error.js';
import type { DashboardAssets, DashboardFile } from '../dashboard-assets.js';

/** Nothing but the agent's own files and API; no framing (clickjacking an action button), no inline script. */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** br, then gzip, when the browser takes them (every browser does; curl without --compressed gets the plain file). */
function encodingFor(request: ApiRequest, f: DashboardFile): 'br' | 'gzip' | undefined {
  const accepted = new Set<string>();
  for (const part of String(request.headers['accept-encoding'] ?? '').split(',')) {
    const [name, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (name && !(q !== undefined && Number(q.slice(2)) === 0)) accepted.add(name);
  }
  const takes = (enc: string) => accepted.has(enc);
  if (f.br && takes('br')) return 'br';
  if (f.gzip && takes('gzip')) return 'gzip';
  return undefined;
}

function send(request: ApiRequest, reply: ApiReply, f: DashboardFile, page: boolean): ApiReply {
  // Hashed names never change content: a year, immutable. The page itself is checked each time (its ETag makes that a 304).
  reply.header('cache-control', page ? 'no-cache' : 'public, max-age=31536000, immutable');
  reply.header('etag', f.etag);
  reply.header('vary', 'accept-encoding');
  if (page) {
    reply.header('content-security-policy', DASHBOARD_CSP);
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'no-referrer');
  }
  if (request.headers['if-none-match'] === f.etag) return reply.code(304).send();
  const enc = encodingFor(request, f);
  if (enc) reply.header('content-encoding', enc);
  return reply.type(f.type).send(enc === 'br' ? f.br : enc === 'gzip' ? f.gzip : f.body);
}

export function registerDashboardRoutes(server: ApiRouter, assets: DashboardAssets | undefined): void {
  const unbuilt = () =>
    new ApiError(503, 'KS_DASHBOARD_UNBUILT', "the dashboard's files are not built (npm run build writes dist/web)");
  const page = async (request: ApiRequest, reply: ApiReply) => {
    const f = assets?.file('/');
    if (!f) throw unbuilt();
    return send(request, reply, f, true);
  };
  server.get('/', page);
  server.get('/index.html', page);
  server.get('/assets/*', async (request, reply) => {
    if (!assets) throw unbuilt();
    const f = assets.file(`/assets/${request.params['*']}`);
    if (!f) throw new ApiError(404, 'KS_NOT_FOUND', `no dashboard file /assets/${request.params['*']}`);
    return send(request, reply, f, false);
  });
}
