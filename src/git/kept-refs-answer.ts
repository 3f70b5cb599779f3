// A rollout gate asks for each subtree it reads by its exact name (`<wave>/<bucket>/`, `<wave>/failed/<commit>/`), but
// anyone who can push reports (every device holds that credential) can push any name INSIDE those subtrees: 80,000
// refs under `…/early/failed/<held commit>/` passed the listing's 8 MiB cap and stopped every gate read, so the
// commit was held for good (issue 28, finding 11). Only refs the reader can use are worth keeping, so the answer is
// filtered as it streams: each pkt-line is read for its ref name, a line the caller would not keep is dropped at once,
// never held, and only the kept lines (and the flush) are passed on to the whole-answer parser. The kept lines are
// what is capped in memory; the wire is capped by the caller's budget, larger for such a listing (ref-lister.ts).
import { OperationError } from '../core/errors.js';
import { closeQuietly, refOf } from './exact-ref-answer.js';

export interface KeptRefsOptions {
  /** Whether a listed ref is one the caller can use; the others are dropped as they arrive. */
  keep: (ref: string) => boolean;
  /** The most bytes of kept lines passed on: past it, KS_GIT_FETCH_TOO_LARGE (what refs that DO count may cost). */
  maxKeptBytes: number;
  url: string;
  /** What is read, in messages: `listing refs of <url>`. */
  what: string;
}

/** The largest pkt-line (65,520 bytes with its length), as Git defines it. */
const MAX_PKT = 65520;

/**
 * A protocol v2 ls-refs answer reduced to the lines whose ref is kept, and its flush. Lines must be pkt-lines
 * `<oid> <name>…` ending in a flush with nothing after it (KS_GIT_SERVER_UNSUPPORTED otherwise).
 */
export async function* keptRefsAnswer(
  source: AsyncIterable<Uint8Array>,
  opts: KeptRefsOptions,
): AsyncGenerator<Uint8Array> {
  const { url } = opts;
  const kept = keeper(opts);
  let flushed = false;
  let lines = 0;
  for await (const line of pktLines(source, url)) {
    if (flushed) throw unsupported(url, 'sent more after the end of its ls-refs answer');
    if (line.length === 4) {
      if (line.toString('latin1') !== '0000')
        throw unsupported(url, `sent a bad pkt-line (length ${line.toString('latin1')}) in answer to ls-refs`);
      flushed = true;
      continue;
    }
    lines++;
    if (kept(refOf(line, url).toString('utf8'), line.length)) yield line;
  }
  if (!flushed)
    throw unsupported(
      url,
      lines === 0 ? 'sent an empty answer to ls-refs (not protocol v2)' : 'ended its ls-refs answer without a flush',
    );
  yield Buffer.from('0000');
}

/**
 * A smart-HTTP discovery answer (`GET info/refs?service=git-upload-pack`) as isomorphic-git reads it, with a protocol
 * v1 advertisement reduced to its first ref line (which carries the capabilities) and the kept ones. A v1 server
 * advertises every ref of the repository there, whatever the prefixes, so unfiltered any ref anywhere counts against
 * the cap. A protocol v2 answer (capabilities only, no refs) is passed on whole, within the kept cap.
 */
export async function* keptAdvertisement(
  source: AsyncIterable<Uint8Array>,
  opts: KeptRefsOptions,
): AsyncGenerator<Uint8Array> {
  const kept = keeper(opts);
  let stage: 'header' | 'first' | 'refs' | 'all' = 'header';
  for await (const line of pktLines(source, opts.url)) {
    const special = line.length === 4;
    const text = special ? '' : line.subarray(4).toString('utf8');
    if (stage === 'header' && !special && text.startsWith('# service=')) {
      stage = 'first';
    } else if ((stage === 'header' || stage === 'first') && !special) {
      // The first line after the header: `version 2` (then capabilities) or v1's first ref with the capabilities.
      stage = text.includes('version 2') ? 'all' : 'refs';
    } else if (stage === 'refs' && !special) {
      const name = (text.split('\0', 1)[0] ?? '').replace(/\n$/, '').split(' ')[1] ?? '';
      if (!kept(name, 0)) continue;
    }
    if (!kept(undefined, line.length)) continue;
    yield line;
  }
}

/**
 * The caller's keep, counting what is kept: `keep(ref, bytes)` tells whether a ref is kept and adds its bytes to the
 * count (ref undefined: counted without asking). Throws KS_GIT_FETCH_TOO_LARGE past the cap.
 */
function keeper(opts: KeptRefsOptions): (ref: string | undefined, bytes: number) => boolean {
  let total = 0;
  return (ref, bytes) => {
    if (ref !== undefined && !opts.keep(ref)) return false;
    total += bytes;
    if (total > opts.maxKeptBytes)
      throw new OperationError(
        'KS_GIT_FETCH_TOO_LARGE',
        `${opts.what} kept more than ${opts.maxKeptBytes} bytes of refs; the listing was abandoned`,
      );
    return true;
  };
}

/**
 * The pkt-lines of `source` as they stream, each whole with its length (a flush or delimiter is its 4 bytes alone).
 * Only a partial line is ever held. Throws KS_GIT_SERVER_UNSUPPORTED on what is not pkt-lines. The source is closed
 * when the reader stops early (a throw, or a consumer that returns).
 */
async function* pktLines(source: AsyncIterable<Uint8Array>, url: string): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]();
  let buf = Buffer.alloc(0);
  let drained = false;
  try {
    for (;;) {
      while (buf.length >= 4) {
        const head = buf.toString('latin1', 0, 4);
        if (!/^[0-9a-f]{4}$/i.test(head))
          throw unsupported(url, `sent something other than pkt-lines ("${head.replace(/[^ -~]/g, '?')}")`);
        const len = parseInt(head, 16);
        if (len <= 2) {
          yield Buffer.from(buf.subarray(0, 4));
          buf = buf.subarray(4);
          continue;
        }
        if (len < 5 || len > MAX_PKT) throw unsupported(url, `sent a bad pkt-line (length ${head})`);
        if (buf.length < len) break;
        // A copy: the chunk it came from is not held on by a kept line.
        yield Buffer.from(buf.subarray(0, len));
        buf = buf.subarray(len);
      }
      const next = await it.next();
      if (next.done) {
        drained = true;
        if (buf.length > 0) throw unsupported(url, 'ended in the middle of a pkt-line');
        return;
      }
      buf = buf.length === 0 ? Buffer.from(next.value) : Buffer.concat([buf, next.value]);
    }
  } finally {
    if (!drained) await closeQuietly(it);
  }
}

function unsupported(url: string, what: string): OperationError {
  return new OperationError('KS_GIT_SERVER_UNSUPPORTED', `${url} ${what}`);
}
