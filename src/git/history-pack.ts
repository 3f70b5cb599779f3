// A deepening's pack, for the ancestry check alone (git-source.ts): it brings older commits with their trees and
// blobs, and only the commits are ever read. Refusing it whole when it carries a blob past the limits, as a tip's
// fetch is refused, would leave a device unable ever to check a later commit's history once a bomb had been pushed
// (every deepening through that commit refused, every later commit KS_HISTORY_UNVERIFIED). So its blobs past the
// limits are left out instead: skipped by inflating them as a stream into nothing (a 1 GiB blob of zeros: about
// 0.25 s and no memory), and the pack rewritten without them, and without any delta built on them. Commits and trees
// are kept, within the limits, or the pack is refused like any other (KS_GIT_PACK_TOO_LARGE).
//
// Skipping still costs the inflating, and deflate expands up to ~1,032 times: a header may state up to 2^53 bytes, so
// a 128 MiB pack of zeros could have a deepening inflate ~128 GiB (tens of seconds of CPU) at every deepening through
// that commit. So a left-out entry's stream is abandoned as soon as it passes the size its header states, and what all
// the left-out entries of one pack may state together is capped (MAX_SKIPPED_BYTES; one past it alone is refused at
// its header, unread).
import { createHash } from 'node:crypto';
import { createInflate } from 'node:zlib';
import { OperationError } from '../core/errors.js';
import {
  inflateEntry,
  OFS_DELTA,
  PACK_HEADER,
  PACK_TRAILER,
  packCount,
  readEntryHeader,
  REF_DELTA,
  deltaResultSize,
} from './pack-walk.js';
import type { PackInflation, PackInflationLimits } from './pack-inflation.js';

const BLOB = 3;
/**
 * The most the left-out entries of one history pack may inflate to, together: 4 GiB, about a second of inflating
 * (zeros inflate at ~3.5 GB/s), where 128 GiB took over half a minute. 2^32 because no legitimate history comes near
 * it: Git hosts refuse a file far smaller (GitHub at 100 MiB), Git for Windows could not hold an object of 4 GiB for
 * years, and data other than a bomb's deflates by well under 32 times, which the 128 MiB a fetch may bring would need.
 * Past it the pack is refused (KS_GIT_PACK_TOO_LARGE), as a pack with a commit past the limits is.
 */
export const MAX_SKIPPED_BYTES = 2 ** 32;
const TYPE_NAMES: Record<number, string> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };

interface Kept {
  start: number;
  dataStart: number;
  dataEnd: number;
  /** OFS_DELTA: the base's offset, whose place in the new pack sets the distance written. */
  baseOffset?: number;
}

/**
 * `pack` without the blobs a history fetch may not inflate: over `maxObjectBytes`, or past `maxInflatedBytes` with
 * what is kept, and the deltas whose base is left out. `cost` is what the kept entries inflate to. Throws
 * KS_GIT_PACK_TOO_LARGE for a commit, tree or tag past the limits (or an object of unknown type: a delta on a base
 * from outside the pack), KS_GIT_THIN_PACK for a malformed pack.
 */
export async function pruneHistoryPack(
  pack: Buffer,
  limits: PackInflationLimits,
  maxSkippedBytes = MAX_SKIPPED_BYTES,
): Promise<{ pack: Buffer; dropped: number; cost: PackInflation }> {
  const fail = (message: string): never => {
    throw new OperationError('KS_GIT_THIN_PACK', message);
  };
  const count = packCount(pack, fail);
  if (count > limits.maxObjects)
    throw tooLarge(`the fetched pack holds ${count} objects, over the limit of ${limits.maxObjects}`);
  const cost: PackInflation = { objects: 0, inflatedBytes: 0, refDeltas: 0 };
  const kept: Kept[] = [];
  /** Per kept entry's offset, the type of the object it is (or produces), when known. */
  const typeAt = new Map<number, number | undefined>();
  const droppedAt = new Set<number>();
  const droppedOids = new Set<string>();
  let skipped = 0;
  let pos = PACK_HEADER;
  for (let i = 0; i < count; i++) {
    const { h, dataStart } = readEntryHeader(pack, pos, fail);
    const delta = h.kind === OFS_DELTA || h.kind === REF_DELTA;
    const type = !delta ? h.kind : h.kind === OFS_DELTA ? typeAt.get(h.baseOffset!) : undefined;
    const baseGone =
      (h.baseOffset !== undefined && droppedAt.has(h.baseOffset)) ||
      (h.baseOid !== undefined && droppedOids.has(h.baseOid));
    const fits = (bytes: number) =>
      bytes <= limits.maxObjectBytes && cost.inflatedBytes + bytes <= limits.maxInflatedBytes;
    const leaveOut = async () => {
      // A blob left out by its header alone: skipped as a stream, and its id kept for ref-deltas that name it.
      if (h.size > maxSkippedBytes - skipped)
        throw tooLarge(
          `the fetched history holds ${skipped === 0 ? 'an object' : 'objects'} left out that would inflate to ${skipped + h.size} bytes, past the ${maxSkippedBytes} one pack may`,
        );
      skipped += h.size;
      const { dataEnd, oid } = await skipEntry(
        pack,
        h.kind === BLOB ? 'blob' : undefined,
        h.size,
        dataStart,
        h.offset,
        fail,
      );
      if (oid) droppedOids.add(oid);
      droppedAt.add(h.offset);
      pos = dataEnd;
    };
    if (baseGone || !fits(h.size)) {
      if (!baseGone && type !== BLOB) throw objectTooLarge(h.offset, h.size, type, limits);
      await leaveOut();
      continue;
    }
    const { data, dataEnd } = inflateEntry(pack, h, dataStart, fail);
    const produced = delta ? deltaResultSize(data, fail) : 0;
    if (delta && !fits(h.size + produced)) {
      if (type !== BLOB) throw objectTooLarge(h.offset, produced, type, limits);
      droppedAt.add(h.offset);
      pos = dataEnd;
      continue;
    }
    cost.inflatedBytes += h.size + produced;
    cost.objects++;
    if (h.kind === REF_DELTA) cost.refDeltas++;
    typeAt.set(h.offset, type);
    kept.push({ start: h.offset, dataStart, dataEnd, ...(h.baseOffset !== undefined && { baseOffset: h.baseOffset }) });
    pos = dataEnd;
  }
  if (pos !== pack.length - PACK_TRAILER)
    fail(`the pack has ${pack.length - PACK_TRAILER - pos} bytes after its last object`);
  const dropped = count - kept.length;
  return { pack: dropped === 0 ? pack : rewrite(pack, kept), dropped, cost };
}

/** The pack of the kept entries, as they came but for the distances of ofs-deltas to bases that moved. */
function rewrite(pack: Buffer, kept: Kept[]): Buffer {
  const parts: Buffer[] = [Buffer.from(pack.subarray(0, PACK_HEADER))];
  parts[0]!.writeUInt32BE(kept.length, 8);
  const moved = new Map<number, number>();
  let at = PACK_HEADER;
  for (const e of kept) {
    moved.set(e.start, at);
    let entry: Buffer;
    if (e.baseOffset === undefined) entry = pack.subarray(e.start, e.dataEnd);
    else {
      // The type-and-size bytes as they were, then the distance back to the base where it now is.
      let sizeEnd = e.start;
      while (pack[sizeEnd]! & 0x80) sizeEnd++;
      entry = Buffer.concat([
        pack.subarray(e.start, sizeEnd + 1),
        ofsDistance(at - moved.get(e.baseOffset)!),
        pack.subarray(e.dataStart, e.dataEnd),
      ]);
    }
    parts.push(entry);
    at += entry.length;
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** Git's encoding of an ofs-delta's distance: big-endian groups of 7 bits, each but the last less one. */
function ofsDistance(distance: number): Buffer {
  const bytes = [distance % 128];
  let n = Math.floor(distance / 128);
  while (n > 0) {
    n -= 1;
    bytes.unshift(0x80 | (n % 128));
    n = Math.floor(n / 128);
  }
  return Buffer.from(bytes);
}

/**
 * Inflates an entry's data as a stream into nothing: where it ends, and (for a whole object of a known type) its id.
 * It must inflate to exactly `size`, as every entry must; one that goes past it is abandoned there, not read on.
 */
function skipEntry(
  pack: Buffer,
  type: string | undefined,
  size: number,
  dataStart: number,
  offset: number,
  fail: (m: string) => never,
): Promise<{ dataEnd: number; oid?: string }> {
  return new Promise((resolve, reject) => {
    const z = createInflate({ chunkSize: 256 * 1024 });
    const hash = type ? createHash('sha1').update(`${type} ${size}\0`) : undefined;
    let out = 0;
    let refused = false;
    const refuse = (message: string) => {
      if (refused) return;
      refused = true;
      try {
        fail(message);
      } catch (err) {
        reject(err as Error);
      }
    };
    z.on('data', (chunk: Buffer) => {
      out += chunk.length;
      if (out > size) {
        refuse(`object at ${offset} inflates to more than the ${size} bytes its header states`);
        z.destroy();
        return;
      }
      hash?.update(chunk);
    });
    z.on('error', (e) => refuse(`object at ${offset} does not inflate: ${e.message}`));
    z.on('end', () => {
      if (refused) return;
      try {
        if (out !== size) fail(`object at ${offset} inflates to ${out} bytes, not ${size}`);
        resolve({ dataEnd: dataStart + z.bytesWritten, ...(hash && { oid: hash.digest('hex') }) });
      } catch (err) {
        reject(err as Error);
      }
    });
    z.end(pack.subarray(dataStart, pack.length - PACK_TRAILER));
  });
}

function objectTooLarge(
  offset: number,
  bytes: number,
  type: number | undefined,
  limits: PackInflationLimits,
): OperationError {
  const what = type === undefined ? 'an object of unknown type' : `a ${TYPE_NAMES[type] ?? 'object'}`;
  return tooLarge(
    `the fetched history holds ${what} at offset ${offset} that inflates to ${bytes} bytes, past the limits (${limits.maxObjectBytes} an object, ${limits.maxInflatedBytes} in all)`,
  );
}

function tooLarge(message: string): OperationError {
  return new OperationError('KS_GIT_PACK_TOO_LARGE', `${message}: refused, and nothing of the pack kept`);
}
