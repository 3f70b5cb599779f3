// The HTTP client of a look that goes through the discovery (isomorphic-git's listServerRefs): it notes whether the
// server answered in protocol v2, holds the ls-refs answer to the cap of a listing rather than of a fetch, and reads
// that answer only as far as the followed ref (exact-ref-answer.ts): refs that merely share its name as a prefix are
// never received, whatever their number.
import type { HttpClient } from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { exactRefAnswer } from './exact-ref-answer.js';
import type { TransferBudget } from './git-http-client.js';

/**
 * `http`, calling `onPost` when an upload-pack POST is answered 200 (isomorphic-git only sends one in protocol v2),
 * failing `budget` once that answer, an ls-refs listing, passes `maxBytes`, and reducing it to the line of `exact`.
 * The discovery before it keeps the whole budget: a protocol v1 server lists every ref of the repository there.
 */
export function discoveryHttp(
  http: HttpClient,
  o: { onPost: () => void; budget: TransferBudget; maxBytes: number; what: string; exact: string; url: string },
): HttpClient {
  return {
    async request(req) {
      const res = await http.request(req);
      if (req.method === 'POST' && res.statusCode === 200 && /\/git-upload-pack$/.test(req.url)) {
        o.onPost();
        if (res.body) res.body = exactRefAnswer(capped(res.body, o), o.exact, o.url);
      }
      return res;
    },
  };
}

async function* capped(
  source: AsyncIterableIterator<Uint8Array>,
  o: { budget: TransferBudget; maxBytes: number; what: string },
): AsyncIterableIterator<Uint8Array> {
  let received = 0;
  for await (const chunk of source) {
    received += chunk.byteLength;
    if (received > o.maxBytes) {
      o.budget.fail(
        new OperationError(
          'KS_GIT_FETCH_TOO_LARGE',
          `${o.what}: the ref listing passed ${o.maxBytes} bytes; the transfer was abandoned`,
        ),
      );
      throw o.budget.failure;
    }
    yield chunk;
  }
}
