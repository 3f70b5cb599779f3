// The ref advertisement a fetch starts with (`GET info/refs?service=git-upload-pack`, protocol v1: isomorphic-git
// fetches in v1 only) lists every ref of the repository. A fetch wants one branch, so the advertisement is read as it
// streams and left once that branch's line has come: the refs after it (Git sends them sorted, HEAD first, so
// `refs/heads/main-1`…, the rollout refs, the notes, pull requests and tags all come after `refs/heads/main`) are
// never received, and of those before it only the first line (it carries the server's capabilities) is kept. The
// library is handed a complete advertisement of those lines. 80,000 branches named `main-…` cost every fetch 9 MB,
// and the library a map of 80,000 refs (issue 28, finding 11). Order is relied on for nothing else: a branch that is
// not listed leaves the advertisement read to its end (bounded by the fetch's cap), as before.
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';

const FLUSH = Buffer.from('0000');

/** `http`, with the ref advertisement of an upload-pack discovery read only as far as `ref` (advertisementUpTo). */
export function oneRefAdvertisedHttp(http: HttpClient, ref: string): HttpClient {
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const res = await http.request(req);
      if (
        res.body &&
        res.statusCode === 200 &&
        (req.method ?? 'GET') === 'GET' &&
        /\/info\/refs\?service=git-upload-pack$/.test(req.url)
      )
        res.body = once(await advertisementUpTo(res.body, ref));
      return res;
    },
  };
}

/**
 * The advertisement in `source` reduced to its service header, its first ref line, the line of `ref` (and its peeled
 * line, if it is a tag) and a flush; passed on whole when it is not made of pkt-lines (the library then refuses it
 * as before). The source is closed once `ref` has come.
 */
export async function advertisementUpTo(source: AsyncIterable<Uint8Array>, ref: string): Promise<Buffer> {
  const it = source[Symbol.asyncIterator]();
  const kept: Buffer[] = [];
  let buf = Buffer.alloc(0);
  let flushes = 0;
  let refLines = 0;
  let seen = false;
  try {
    for (;;) {
      while (buf.length >= 4) {
        const head = buf.toString('latin1', 0, 4);
        if (!/^[0-9a-f]{4}$/i.test(head)) return Buffer.concat([...kept, buf, await rest(it)]);
        const len = parseInt(head, 16);
        if (len === 0) {
          kept.push(FLUSH);
          buf = buf.subarray(4);
          // The header's flush, then the one that ends the refs: what follows is not the library's to read either.
          if (++flushes === 2) return Buffer.concat([...kept, buf, await rest(it)]);
          continue;
        }
        if (len < 4 || buf.length < len) break;
        const line = buf.subarray(0, len);
        buf = buf.subarray(len);
        const name = flushes === 0 ? undefined : refName(line);
        // The line after the ref's: its peeled line (a tag's, which comes right after it) or the end of what is read.
        if (seen) {
          if (name === `${ref}^{}`) kept.push(line);
          kept.push(FLUSH);
          return Buffer.concat(kept);
        }
        if (name === undefined || refLines++ === 0 || name === ref) kept.push(line);
        if (name === ref) seen = true;
      }
      const next = await it.next();
      if (next.done) return Buffer.concat([...kept, buf]);
      buf = buf.length === 0 ? Buffer.from(next.value) : Buffer.concat([buf, next.value]);
    }
  } finally {
    await closeQuietly(it);
  }
}

/** The ref a v1 advertisement line names: `<oid> <name>[\0<capabilities>]\n`. */
function refName(line: Buffer): string {
  const text = line.toString('latin1', 4);
  const space = text.indexOf(' ');
  if (space < 0) return '';
  const name = text.slice(space + 1);
  const end = name.search(/[\0\n]/);
  return end < 0 ? name : name.slice(0, end);
}

async function rest(it: AsyncIterator<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for (let n = await it.next(); !n.done; n = await it.next()) chunks.push(n.value);
  return Buffer.concat(chunks);
}

async function closeQuietly(it: AsyncIterator<Uint8Array>): Promise<void> {
  try {
    await it.return?.();
  } catch {
    /* isomorphic-git's node client closes the body and answers return() with undefined: closed all the same */
  }
}

async function* once(body: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield body;
}
