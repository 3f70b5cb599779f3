// The answer of an ls-refs exchange read whole (parseLsRefsAnswer), the ref-name check it applies, and the small text
// helpers lsRefsV2's messages share with it. Apart from git-ls-refs.ts, which sends the request and maps its HTTP
// status; this is the pure part, fuzzed on its own (reliability/fuzz/targets/git-ls-refs.ts).
import { OperationError } from '../core/errors.js';

/** One ref as listed: its full name and the object it points at (a tag's own object, not peeled). */
export interface RefEntry {
  ref: string;
  oid: string;
}

const OID = /^[0-9a-f]{40}$/;
/** The largest pkt-line (65,520 bytes with its length), as Git defines it. */
const MAX_PKT = 65520;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The refs of an ls-refs answer: pkt-lines `<oid> <refname>[ <attribute>…]`, then a flush and nothing after it.
 * Anything else (a protocol v0 answer, an `ERR` line, a bad length, a bad oid or ref name, a duplicate, a missing
 * flush) is KS_GIT_SERVER_UNSUPPORTED: it is not a protocol v2 listing.
 */
export function parseLsRefsAnswer(body: Uint8Array, url = 'the server'): RefEntry[] {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const refs: RefEntry[] = [];
  const seen = new Set<string>();
  let pos = 0;
  for (;;) {
    if (pos + 4 > buf.length)
      throw unsupported(
        url,
        buf.length === 0
          ? 'sent an empty answer to ls-refs (not protocol v2)'
          : 'ended its ls-refs answer without a flush',
      );
    const head = buf.toString('latin1', pos, pos + 4);
    if (!/^[0-9a-f]{4}$/i.test(head))
      throw unsupported(url, `sent something other than pkt-lines in answer to ls-refs ("${printable(head)}")`);
    const len = parseInt(head, 16);
    if (len === 0) break;
    if (len < 5 || len > MAX_PKT || pos + len > buf.length)
      throw unsupported(url, `sent a bad pkt-line (length ${head}) in answer to ls-refs`);
    let line: string;
    try {
      line = UTF8.decode(buf.subarray(pos + 4, pos + len));
    } catch {
      throw unsupported(url, 'sent a ref line that is not UTF-8 in answer to ls-refs');
    }
    pos += len;
    if (line.endsWith('\n')) line = line.slice(0, -1);
    if (line.startsWith('ERR ')) throw unsupported(url, `refused ls-refs: ${printable(line.slice(4))}`);
    const [oid = '', ref = ''] = line.split(' ', 2);
    if (!OID.test(oid)) throw unsupported(url, `listed "${printable(oid)}", not an object id, in answer to ls-refs`);
    if (!isValidRefName(ref))
      throw unsupported(url, `listed "${printable(ref)}", not a ref name, in answer to ls-refs`);
    if (seen.has(ref)) throw unsupported(url, `listed ${ref} twice in answer to ls-refs`);
    seen.add(ref);
    refs.push({ ref, oid });
  }
  if (pos + 4 !== buf.length) throw unsupported(url, 'sent more after the end of its ls-refs answer');
  return refs;
}

/**
 * A ref name Git would accept (git check-ref-format, with one or more components): no control characters, spaces,
 * `~^:?*[\`, `..`, `@{`, `//`, component starting with `.` or ending with `.lock`, and no trailing `/` or `.`.
 */
export function isValidRefName(ref: string): boolean {
  if (ref === '' || ref === '@' || ref.length > 4096) return false;
  if (hasControlOrSpace(ref) || /[~^:?*[\\]/.test(ref) || ref.includes('..') || ref.includes('@{')) return false;
  if (ref.endsWith('/') || ref.endsWith('.')) return false;
  return ref.split('/').every((c) => c !== '' && !c.startsWith('.') && !c.endsWith('.lock'));
}

export function hasControlOrSpace(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

export function unsupported(url: string, what: string): OperationError {
  return new OperationError('KS_GIT_SERVER_UNSUPPORTED', `${url} ${what}`);
}

/** The server's text as shown in a message: printable ASCII, bounded. */
export function printable(text: string): string {
  const shown = [...text].filter((c) => c >= ' ' && c <= '~').join('');
  return shown.length > 80 ? `${shown.slice(0, 80)}…` : shown;
}
