// A look wants one ref, but protocol v2 `ls-refs` only knows prefixes: `ref-prefix refs/heads/main` also lists
// `refs/heads/main-1`, `refs/heads/main-2`… So anyone who can push could bury the followed branch under 80,000 such
// names and make the answer pass a look's cap at every poll: no device would ever see a new commit (issue 28, 11).
// The answer is therefore read as it streams, line by line, and left as soon as the ref is found: Git lists refs
// sorted by name, and a name sorts before every longer name it is a prefix of, so the followed branch is the first
// line whatever else shares its prefix. Nothing else is kept. Order is not relied on otherwise: a listing without the
// ref (or a server listing out of order) is read on to its end, bounded by the caller's cap as before.
import { OperationError } from '../core/errors.js';

/** The largest pkt-line (65,520 bytes with its length), as Git defines it. */
const MAX_PKT = 65520;
const FLUSH = Buffer.from('0000');
const OID = /^[0-9a-f]{40}$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The ls-refs answer in `source`, reduced to the line of `ref` (if listed) and a flush: what a parser of a whole
 * answer reads as a listing of that one ref. Reading stops at that line and the source is then closed, so the rest of
 * the listing is never received. Lines read on the way must be pkt-lines `<oid> <name>…`, and a listing must end
 * with a flush and nothing after it (KS_GIT_SERVER_UNSUPPORTED otherwise: not a protocol v2 listing).
 */
export async function* exactRefAnswer(
  source: AsyncIterable<Uint8Array>,
  ref: string,
  url: string,
): AsyncGenerator<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  const wanted = Buffer.from(ref, 'utf8');
  let buf = Buffer.alloc(0);
  let found: Buffer | undefined;
  let lines = 0;
  let ended = false;
  let drained = false;
  try {
    scan: for (;;) {
      while (buf.length >= 4) {
        const head = buf.toString('latin1', 0, 4);
        if (!/^[0-9a-f]{4}$/i.test(head))
          throw unsupported(url, `sent something other than pkt-lines in answer to ls-refs ("${printable(head)}")`);
        const len = parseInt(head, 16);
        if (len === 0) {
          ended = true;
          buf = buf.subarray(4);
          break scan;
        }
        if (len < 5 || len > MAX_PKT)
          throw unsupported(url, `sent a bad pkt-line (length ${head}) in answer to ls-refs`);
        if (buf.length < len) break;
        const line = buf.subarray(0, len);
        buf = buf.subarray(len);
        lines++;
        if (refOf(line, url).equals(wanted)) {
          found = Buffer.from(line);
          break scan;
        }
      }
      const next = await it.next();
      if (next.done)
        throw unsupported(
          url,
          buf.length === 0 && lines === 0
            ? 'sent an empty answer to ls-refs (not protocol v2)'
            : 'ended its ls-refs answer without a flush',
        );
      buf = buf.length === 0 ? Buffer.from(next.value) : Buffer.concat([buf, next.value]);
    }
    // A complete answer ends at its flush: anything after it is not a listing.
    if (ended) {
      if (buf.length > 0) throw unsupported(url, 'sent more after the end of its ls-refs answer');
      for (let n = await it.next(); !n.done; n = await it.next())
        if (n.value.byteLength > 0) throw unsupported(url, 'sent more after the end of its ls-refs answer');
      drained = true;
    }
  } finally {
    // Left early: close the body, so the rest of the listing is never received.
    if (!drained) await closeQuietly(it);
  }
  if (found) yield found;
  yield FLUSH;
}

/**
 * The ref name of one ls-refs line (`<oid> <ref>[ <attribute>…]`), as UTF-8 bytes. Only the line kept is read as a
 * ref by the caller's parser; the others are read for their name alone.
 */
export function refOf(line: Buffer, url: string): Buffer {
  let text: string;
  try {
    text = UTF8.decode(line.subarray(4));
  } catch {
    throw unsupported(url, 'sent a ref line that is not UTF-8 in answer to ls-refs');
  }
  if (text.endsWith('\n')) text = text.slice(0, -1);
  if (text.startsWith('ERR ')) throw unsupported(url, `refused ls-refs: ${printable(text.slice(4))}`);
  const [oid = '', ref = ''] = text.split(' ', 2);
  if (!OID.test(oid) || ref === '')
    throw unsupported(url, `listed "${printable(text)}", not a ref, in answer to ls-refs`);
  return Buffer.from(ref, 'utf8');
}

/**
 * Ends a body read no further. isomorphic-git's node client destroys the response there but answers `return()` with
 * undefined, which an async generator wrapped around it turns into a TypeError: the body is closed all the same.
 */
export async function closeQuietly(it: AsyncIterator<Uint8Array>): Promise<void> {
  try {
    await it.return?.();
  } catch {
    /* closed: see above */
  }
}

function unsupported(url: string, what: string): OperationError {
  return new OperationError('KS_GIT_SERVER_UNSUPPORTED', `${url} ${what}`);
}

function printable(text: string): string {
  const shown = [...text].filter((c) => c >= ' ' && c <= '~').join('');
  return shown.length > 80 ? `${shown.slice(0, 80)}…` : shown;
}
