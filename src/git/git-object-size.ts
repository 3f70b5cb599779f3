// The size of an object in a Git repository's store, read from its header without inflating the object: the revision
// reader refuses a file over its limit (or one it has no business reading) before isomorphic-git, which only reads
// whole objects, would hold it all in memory. A pack entry's header states the size of a whole object; a delta's
// instructions start with the size of the object they produce, so only their first bytes are inflated. A loose object
// starts with `<type> <size>\0`, also read from its first inflated bytes. At most a few kilobytes of compressed input
// are inflated for that (a few megabytes out, whatever the object): a header not found there is refused as unreadable.
import { open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { constants, inflateSync } from 'node:zlib';
import { OperationError } from '../core/errors.js';
import { OFS_DELTA, REF_DELTA } from './pack-walk.js';

/** Compressed bytes inflated in turn until a header is found: bounds what a header costs to read. */
const WINDOWS = [64, 512, 4096];
const IDX_MAGIC = 0xff744f63;
const OID = /^[0-9a-f]{40}$/;

interface PackIndex {
  idx: Buffer;
  pack: string;
}

/** Sizes of the objects of one repository (`gitdir`): its loose objects and its packs (idx version 2). */
export class GitObjectSizes {
  private indexes?: Promise<PackIndex[]>;

  constructor(private readonly gitdir: string) {}

  /**
   * The size `oid` inflates to; undefined when neither a loose object nor a pack's index here holds it (the caller
   * then reads it as before). Throws OperationError KS_GIT_READ_FAILED when its header cannot be read.
   */
  async sizeOf(oid: string): Promise<number | undefined> {
    if (!OID.test(oid)) return undefined;
    const loose = await this.looseSize(oid);
    if (loose !== undefined) return loose;
    let found = await this.find(oid, (this.indexes ??= this.readIndexes()));
    // A pack may have come since the indexes were read (a deepening): once more, afresh.
    if (!found) found = await this.find(oid, (this.indexes = this.readIndexes()));
    return found && packedSize(found.pack, found.offset, oid);
  }

  private async looseSize(oid: string): Promise<number | undefined> {
    let head: Buffer;
    try {
      head = await readStart(join(this.gitdir, 'objects', oid.slice(0, 2), oid.slice(2)), 0, WINDOWS.at(-1)!);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    const m = /^(?:blob|tree|commit|tag) (\d{1,15})\0/.exec(inflatedStart(head, 32, oid).toString('latin1'));
    if (!m) throw unreadable(oid, 'a loose object without a header');
    return Number(m[1]);
  }

  private async find(
    oid: string,
    indexes: Promise<PackIndex[]>,
  ): Promise<{ pack: string; offset: number } | undefined> {
    for (const p of await indexes) {
      const offset = offsetIn(p.idx, oid);
      if (offset !== undefined) return { pack: p.pack, offset };
    }
    return undefined;
  }

  private async readIndexes(): Promise<PackIndex[]> {
    const dir = join(this.gitdir, 'objects', 'pack');
    const names = await readdir(dir).catch(() => [] as string[]);
    const out: PackIndex[] = [];
    for (const name of names.filter((n) => n.endsWith('.idx')).sort()) {
      const idx = await readFile(join(dir, name)).catch(() => undefined);
      if (idx && idx.length >= 8 + 1024 && idx.readUInt32BE(0) === IDX_MAGIC && idx.readUInt32BE(4) === 2)
        out.push({ idx, pack: join(dir, name.replace(/\.idx$/, '.pack')) });
    }
    return out;
  }
}

/** The pack offset of `oid` in a version 2 index: the fan-out narrows a binary search of the sorted ids. */
function offsetIn(idx: Buffer, oid: string): number | undefined {
  const want = Buffer.from(oid, 'hex');
  const first = want[0]!;
  const count = idx.readUInt32BE(8 + 255 * 4);
  let lo = first === 0 ? 0 : idx.readUInt32BE(8 + (first - 1) * 4);
  let hi = idx.readUInt32BE(8 + first * 4);
  const ids = 8 + 1024;
  if (idx.length < ids + count * 28) return undefined;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = want.compare(idx, ids + mid * 20, ids + mid * 20 + 20);
    if (c === 0) {
      const small = idx.readUInt32BE(ids + count * 24 + mid * 4);
      if (!(small & 0x80000000)) return small;
      // Packs past 2 GiB keep large offsets in a table of their own.
      const at = ids + count * 28 + (small & 0x7fffffff) * 8;
      return at + 8 <= idx.length ? Number(idx.readBigUInt64BE(at)) : undefined;
    }
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return undefined;
}

/** The size of the object at `offset` of `pack`: its header's, or for a delta the size its instructions produce. */
async function packedSize(pack: string, offset: number, oid: string): Promise<number> {
  const head = await readStart(pack, offset, 32 + WINDOWS.at(-1)!);
  let pos = 0;
  let byte = head[pos++] ?? 0;
  const kind = (byte >> 4) & 7;
  let size = byte & 15;
  for (let shift = 4; byte & 0x80; shift += 7) {
    if (pos >= head.length || shift > 49) throw unreadable(oid, 'a bad pack entry header');
    byte = head[pos++]!;
    size += (byte & 0x7f) * 2 ** shift;
  }
  if (kind !== OFS_DELTA && kind !== REF_DELTA) return size;
  if (kind === REF_DELTA) pos += 20;
  else {
    // The base's distance back: a varint whose value does not matter here.
    while (pos < head.length && head[pos]! & 0x80) pos++;
    pos++;
  }
  // The delta's instructions start with two sizes: its base's, then its result's.
  const start = inflatedStart(head.subarray(pos), 20, oid);
  let at = 0;
  const varint = () => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= start.length || shift > 49) throw unreadable(oid, 'a delta without its sizes');
      const b = start[at++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return n;
    }
  };
  varint();
  return varint();
}

/** At least `want` of the first bytes `compressed` inflates to (as many as the first window that gives them). */
function inflatedStart(compressed: Buffer, want: number, oid: string): Buffer {
  for (const w of WINDOWS) {
    let out: Buffer;
    try {
      out = inflateSync(compressed.subarray(0, w), { finishFlush: constants.Z_SYNC_FLUSH });
    } catch (e) {
      throw unreadable(oid, `it does not inflate (${(e as Error).message})`);
    }
    if (out.length >= want || w >= compressed.length) return out;
  }
  throw unreadable(oid, `no header within its first ${WINDOWS.at(-1)} compressed bytes`);
}

async function readStart(path: string, offset: number, length: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    const { bytesRead } = await fh.read(buf, 0, length, offset);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

function unreadable(oid: string, why: string): OperationError {
  return new OperationError(
    'KS_GIT_READ_FAILED',
    `the size of object ${oid} cannot be read without inflating it: ${why}`,
  );
}
