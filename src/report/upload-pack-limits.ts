// What an upload-pack answer would cost once the Git library has it: the pack's objects, and the bytes they inflate to.
//
// A byte cap on the wire is no bound on memory: zlib turns 400 kB of a pack into a 400 MB note, and isomorphic-git
// inflates every object of a fetched pack to index it (and the reporter reads the note it built on). So the answer is
// held (its wire bytes are capped before this) and walked here first: each object's header states its size, checked
// against what is left of the limit BEFORE anything is inflated; each is then inflated to exactly that size at most,
// so a header that lies is caught too. A delta is charged for the object it produces (its header says how big).
import { deltaResultSize, OFS_DELTA, packCount, REF_DELTA, walkPack } from '../git/pack-walk.js';
import { StatusDeliveryError } from './commit-status.js';

export interface PackLimits {
  /** Bytes every object of the pack may inflate to, together. */
  maxInflatedBytes: number;
  /** Objects the pack may hold. */
  maxObjects: number;
}

export interface PackCost {
  objects: number;
  inflatedBytes: number;
}

/**
 * The cost of the pack in an upload-pack answer (`body`: its pkt-lines, side band or not). Throws StatusDeliveryError
 * KS_STATUS_NOTES_TOO_LARGE past a limit, KS_STATUS_SERVER_ERROR for an answer that is not a well-formed pack (never
 * handed on: what cannot be walked here cannot be bounded). An answer without a pack (nothing new) costs nothing.
 */
export function uploadPackCost(body: Buffer, limits: PackLimits, what: string): PackCost {
  const pack = packOf(body, what);
  return pack ? packCost(pack, limits, what) : { objects: 0, inflatedBytes: 0 };
}

/** The pack of an upload-pack answer: side-band channel 1 gathered, or the raw bytes after the last pkt-line. */
function packOf(body: Buffer, what: string): Buffer | undefined {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos < body.length) {
    if (body.toString('latin1', pos, pos + 4) === 'PACK') return body.subarray(pos); // no side band: the rest is the pack
    const head = body.toString('latin1', pos, pos + 4);
    const len = /^[0-9a-f]{4}$/.test(head) ? parseInt(head, 16) : NaN;
    if (Number.isNaN(len) || (len > 0 && len < 4) || pos + Math.max(len, 4) > body.length)
      throw malformed(what, 'the answer is not pkt-lines');
    if (len > 4 && body[pos + 4] === 1) parts.push(body.subarray(pos + 5, pos + len));
    pos += Math.max(len, 4);
  }
  return parts.length ? Buffer.concat(parts) : undefined;
}

function packCost(pack: Buffer, limits: PackLimits, what: string): PackCost {
  // zlib's own words are left out of what is said: "unexpected end of file" would read as a damaged cache
  // (delivery-deadline.ts).
  const fail = (message: string): never => {
    throw malformed(what, message.replace(/: .*$/, ''));
  };
  const count = packCount(pack, fail);
  if (count > limits.maxObjects) throw tooLarge(what, `${count} objects (the limit is ${limits.maxObjects})`);
  let inflatedBytes = 0;
  const charge = (bytes: number) => {
    if (inflatedBytes + bytes > limits.maxInflatedBytes)
      throw tooLarge(what, `objects that inflate to more than ${limits.maxInflatedBytes} bytes`);
  };
  walkPack(
    pack,
    fail,
    // Before inflating: the size the header states is what inflating may allocate.
    (h) => charge(h.size),
    (h, data) => {
      // A delta costs the object it makes: its second size (after the base's) says how big.
      const made = h.kind === OFS_DELTA || h.kind === REF_DELTA ? deltaResultSize(data, fail) : h.size;
      charge(made);
      inflatedBytes += made;
    },
  );
  return { objects: count, inflatedBytes };
}

function tooLarge(what: string, detail: string): StatusDeliveryError {
  return new StatusDeliveryError(
    'KS_STATUS_NOTES_TOO_LARGE',
    `${what}: the server sent a pack of ${detail}; the fetch was abandoned`,
  );
}

function malformed(what: string, detail: string): StatusDeliveryError {
  return new StatusDeliveryError(
    'KS_STATUS_SERVER_ERROR',
    `${what}: the server's answer is not a well-formed pack: ${detail}`,
  );
}
