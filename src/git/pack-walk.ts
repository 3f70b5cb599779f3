// Walking a Git pack entry by entry, as a fetch receives it: each entry's header (type, the size it inflates to, the
// base of a delta), then its data inflated to exactly that size and no more. Shared by the bound on what a fetch may
// inflate (pack-inflation.ts), which looks at each header before anything is inflated, and by the thin-pack
// completion (thin-pack.ts), which keeps what it inflates.
import { inflateSync } from 'node:zlib';

export const OFS_DELTA = 6;
export const REF_DELTA = 7;
/** Whole objects: commit, tree, blob, tag. */
export const WHOLE_KINDS: ReadonlySet<number> = new Set([1, 2, 3, 4]);
export const PACK_HEADER = 12;
export const PACK_TRAILER = 20;

export interface PackEntryHeader {
  offset: number;
  kind: number;
  /** What the entry's data inflates to: the object itself, or for a delta the delta's instructions. */
  size: number;
  /** OFS_DELTA: the base's offset; REF_DELTA: the base's id. */
  baseOffset?: number;
  baseOid?: string;
}

/**
 * Calls `onHeader` with each entry's header, before its data is inflated (it may throw to stop the walk there), then
 * `onData` with the data, inflated to exactly the size the header states: a stream that would inflate further fails
 * at that size instead, so what the header says is what the walk ever holds. A malformed pack goes to `fail`.
 */
export function walkPack(
  pack: Buffer,
  fail: (message: string) => never,
  onHeader: (h: PackEntryHeader) => void,
  onData: (h: PackEntryHeader, data: Buffer) => void,
): void {
  const count = packCount(pack, fail);
  const end = pack.length - PACK_TRAILER;
  let pos = PACK_HEADER;
  for (let i = 0; i < count; i++) {
    const { h, dataStart } = readEntryHeader(pack, pos, fail);
    onHeader(h);
    const { data, dataEnd } = inflateEntry(pack, h, dataStart, fail);
    pos = dataEnd;
    onData(h, data);
  }
  // Bytes between the last object and the trailer would be stored with the pack (git index-pack refuses such a pack
  // as "junk at the end"): a count lower than the objects sent, or garbage appended before the checksum.
  if (pos !== end) fail(`the pack has ${end - pos} bytes after its last object`);
}

/** The pack's object count, once its signature and version are checked. */
export function packCount(pack: Buffer, fail: (message: string) => never): number {
  if (pack.length < PACK_HEADER + PACK_TRAILER || pack.toString('latin1', 0, 4) !== 'PACK')
    fail('the response holds no pack');
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3) fail(`pack version ${version} is not supported`);
  return pack.readUInt32BE(8);
}

/** The header of the entry at `offset`, and where its compressed data starts. */
export function readEntryHeader(
  pack: Buffer,
  offset: number,
  fail: (message: string) => never,
): { h: PackEntryHeader; dataStart: number } {
  const end = pack.length - PACK_TRAILER;
  let pos = offset;
  if (pos >= end) fail('the pack ends before its last object');
  let byte = pack[pos++]!;
  const kind = (byte >> 4) & 7;
  let size = byte & 15;
  let shift = 4;
  while (byte & 0x80) {
    if (pos >= end || shift > 49) fail(`bad object header at ${offset}`);
    byte = pack[pos++]!;
    size += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  }
  const h: PackEntryHeader = { offset, kind, size };
  if (kind === OFS_DELTA) {
    byte = pack[pos++]!;
    let distance = byte & 0x7f;
    while (byte & 0x80) {
      if (pos >= end || distance > 2 ** 40) fail(`bad ofs-delta at ${offset}`);
      byte = pack[pos++]!;
      distance = (distance + 1) * 128 + (byte & 0x7f);
    }
    // Backwards only, to an object's start (checked when deltas are matched to bases): no forward or self loops.
    if (distance === 0 || distance > offset) fail(`bad ofs-delta at ${offset}`);
    h.baseOffset = offset - distance;
  } else if (kind === REF_DELTA) {
    if (pos + 20 > end) fail(`bad ref-delta at ${offset}`);
    h.baseOid = pack.toString('hex', pos, pos + 20);
    pos += 20;
  } else if (!WHOLE_KINDS.has(kind)) fail(`unknown object type ${kind} at ${offset}`);
  return { h, dataStart: pos };
}

/** The entry's data inflated, to exactly the size its header states and no further, and where it ends. */
export function inflateEntry(
  pack: Buffer,
  h: PackEntryHeader,
  dataStart: number,
  fail: (message: string) => never,
): { data: Buffer; dataEnd: number } {
  let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    inflated = inflateSync(pack.subarray(dataStart, pack.length - PACK_TRAILER), {
      info: true,
      maxOutputLength: Math.max(h.size, 1),
    }) as unknown as typeof inflated;
  } catch (err) {
    fail(`object at ${h.offset} does not inflate: ${(err as Error).message}`);
  }
  if (inflated.buffer.length !== h.size)
    fail(`object at ${h.offset} inflates to ${inflated.buffer.length} bytes, not ${h.size}`);
  return { data: inflated.buffer, dataEnd: dataStart + inflated.engine.bytesWritten };
}

/** The size of the object a delta produces: the second of the two sizes its instructions start with. */
export function deltaResultSize(delta: Buffer, fail: (message: string) => never): number {
  let pos = 0;
  const varint = () => {
    let n = 0;
    let shift = 0;
    let byte: number;
    do {
      if (pos >= delta.length || shift > 49) fail('truncated delta');
      byte = delta[pos++]!;
      n += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return n;
  };
  varint();
  return varint();
}
