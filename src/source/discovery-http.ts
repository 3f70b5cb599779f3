// The HTTP client of a look that goes through the discovery (isomorphic-git's listServerRefs): it notes whether the
// server answered in protocol v2, and holds the ls-refs answer to the cap of a listing rather than of a fetch.
import type { HttpClient } from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import type { TransferBudget } from './git-http-client.js';

/**
 * `http`, calling `onPost` when an upload-pack POST is answered 200 (isomorphic-git only sends one in protocol v2),
 * and failing `budget` once that answer, an ls-refs listing, passes `maxBytes`. The discovery before it keeps the
 * whole budget: a protocol v1 server lists every ref of the repository there.
 */
export function discoveryHttp(http: HttpClient, o: { onPost: () => void; budget: TransferBudget; maxBytes: number; what: string }): HttpClient {
  return {
    async request(req) {
      const res = await http.request(req);
      if (req.method === 'POST' && res.statusCode === 200 && /\/git-upload-pack$/.test(req.url)) {
        o.onPost();
        if (res.body) res.body = capped(res.body, o);
      }
      return res;
    },
  };
}

async function* capped(source: AsyncIterableIterator<Uint8Array>, o: { budget: TransferBudget; maxBytes: number; what: string }): AsyncIterableIterator<Uint8Array> {
  let received = 0;
  for await (const chunk of source) {
    received += chunk.byteLength;
    if (received > o.maxBytes) {
      o.budget.fail(new OperationError('KS_GIT_FETCH_TOO_LARGE', `${o.what}: the ref listing passed ${o.maxBytes} bytes; the transfer was abandoned`));
      throw o.budget.failure;
    }
    yield chunk;
  }
}
