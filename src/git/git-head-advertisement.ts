// isomorphic-git's fetch resolves the remote's HEAD after every fetch, whatever `ref`, `remoteRef` and `singleBranch`
// say (isomorphic-git issue #1654, open; 1.44 here). A server repository whose HEAD names a branch that does not exist
// (a bare repository made with `master` while the fleet pushes `main`, common on self-hosted servers) advertises no
// HEAD at all, so every fetch failed with "Could not find HEAD." although `git fetch origin main` works there. The
// followed branch is all a fetch here wants, so the advertisement is completed with a HEAD line naming its commit:
// with singleBranch the library only uses HEAD for the `defaultBranch` it reports, which nothing here reads.
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';

const FLUSH = '0000';
const REF_LINE = /^([0-9a-f]{40}|[0-9a-f]{64}) ([^\0\n ]+)/;

/**
 * A protocol v1 ref advertisement (`GET info/refs?service=git-upload-pack`) with `<oid of branchRef> HEAD` added when
 * it lists the branch but no HEAD. Anything else (HEAD present, branch absent, protocol v2, an unreadable body) is
 * returned unchanged, for the library to handle as before.
 */
export function withAdvertisedHead(body: Uint8Array, branchRef: string): Uint8Array {
  const text = Buffer.from(body).toString('latin1');
  let pos = 0;
  let branchOid: string | undefined;
  let lastFlush = -1;
  while (pos < text.length) {
    const len = /^[0-9a-f]{4}$/.test(text.slice(pos, pos + 4)) ? parseInt(text.slice(pos, pos + 4), 16) : NaN;
    if (Number.isNaN(len) || (len > 0 && len < 4) || pos + Math.max(len, 4) > text.length) return body;
    if (len === 0) {
      lastFlush = pos;
      pos += 4;
      continue;
    }
    const m = REF_LINE.exec(text.slice(pos + 4, pos + len));
    if (m?.[2] === 'HEAD') return body;
    if (m?.[2] === branchRef) branchOid = m[1];
    pos += len;
  }
  // Only a complete advertisement (ending in a flush) is touched.
  if (branchOid === undefined || lastFlush !== text.length - FLUSH.length) return body;
  const payload = `${branchOid} HEAD\n`;
  const line = `${(payload.length + 4).toString(16).padStart(4, '0')}${payload}`;
  return Buffer.concat([Buffer.from(body).subarray(0, lastFlush), Buffer.from(line, 'latin1'), Buffer.from(FLUSH)]);
}

/**
 * An HttpClient for fetches of `ref` (a branch, or any ref such as refs/notes/…) whose ref advertisements are
 * completed with HEAD by withAdvertisedHead. Wrap the client a fetch uses; other requests pass through untouched.
 */
export function headCompletingHttp(http: HttpClient, ref: string): HttpClient {
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const res = await http.request(req);
      if (
        res.body &&
        res.statusCode === 200 &&
        (req.method ?? 'GET') === 'GET' &&
        /\/info\/refs\?service=git-upload-pack$/.test(req.url)
      )
        res.body = completed(res.body, ref);
      return res;
    },
  };
}

/** The whole advertisement (it is small: refs only, and bounded by the wrapped client), with HEAD if it lacked one. */
async function* completed(source: AsyncIterableIterator<Uint8Array>, ref: string): AsyncIterableIterator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of source) chunks.push(chunk);
  yield withAdvertisedHead(Buffer.concat(chunks), ref);
}
