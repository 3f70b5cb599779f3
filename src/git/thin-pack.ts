// Completes a thin pack before it is stored, the way `git index-pack --fix-thin` does. A thin pack (fetch capability
// `thin-pack`) sends a changed object as a delta against a base the client already has (a ref-delta naming an object
// outside the pack): for one new commit that is the difference between a few hundred bytes and the whole tree. But a
// pack left thin on disk makes isomorphic-git leave it to read the base, and it reads an object from the first pack
// that lists it: once content comes back (a revert) or a shallow cache is deepened, two packs can hold the same objects
// as deltas of each other, and the read looped forever (issue 16). So every base from outside the pack is read from
// the local store here and put into the pack as a whole object: each stored pack then resolves all its deltas within
// itself, as a full pack does, and no read ever leaves the pack it started in.
//
// The resolution below is its own cycle guard: every object is resolved at most once, from a base already resolved
// (a whole object, or one read from the local store), so a pack whose deltas form a loop (a broken or hostile server)
// ends with objects left unresolved and is refused (KS_GIT_THIN_PACK) instead of being followed round.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { OperationError } from '../core/errors.js';
import { OFS_DELTA, PACK_HEADER, PACK_TRAILER, REF_DELTA, walkPack } from './pack-walk.js';

export type GitObjectType = 'commit' | 'tree' | 'blob' | 'tag';

/** An object of the local store: what a ref-delta's base outside the pack resolves to. */
export interface BaseObject {
  type: GitObjectType;
  object: Uint8Array;
}

/** Reads an object of the local store; undefined when it is not there. */
export type ReadBase = (oid: string) => Promise<BaseObject | undefined>;

const TYPES: Record<number, GitObjectType> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
const TYPE_NUMBERS: Record<GitObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

interface Entry {
  offset: number;
  kind: number;
  /** OFS_DELTA: the base's offset; REF_DELTA: the base's id. */
  baseOffset?: number;
  baseOid?: string;
  /** Inflated data: the object itself, or the delta. */
  data: Buffer;
  /** Once resolved. */
  type?: GitObjectType;
  content?: Buffer;
  oid?: string;
}

function fail(message: string): never {
  throw new OperationError('KS_GIT_THIN_PACK', message);
}

/**
 * The pack with every base it names from outside itself added as a whole object (before the pack's own entries, so
 * that ofs-delta distances stay as they were and bases come before their deltas), the object count and trailing
 * checksum rewritten. A pack with no such base comes back unchanged. Refused with KS_GIT_THIN_PACK when it is
 * malformed, names a base the local store lacks, or has deltas that never resolve (a cycle); with
 * KS_GIT_PACK_TOO_LARGE when the bases read from the store come to more than `maxBaseBytes` (what is left of the
 * fetch's inflation bound once the pack itself is counted: pack-inflation.ts).
 */
export async function completeThinPack(
  input: Uint8Array,
  readBase: ReadBase,
  opts: { maxBaseBytes?: number } = {},
): Promise<Uint8Array> {
  const pack = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  const entries = parsePack(pack);
  if (!entries.some((e) => e.kind === REF_DELTA)) return input;

  const byOffset = new Map(entries.map((e) => [e.offset, e]));
  const byOid = new Map<string, { type: GitObjectType; content: Buffer }>();
  // Deltas waiting for their base, by base offset or id: released once that base resolves, never visited before.
  const waitingOnOffset = new Map<number, Entry[]>();
  const waitingOnOid = new Map<string, Entry[]>();
  const ready: Entry[] = [];
  for (const e of entries) {
    if (e.kind === OFS_DELTA) {
      if (!byOffset.has(e.baseOffset!)) fail(`an ofs-delta at ${e.offset} names no object of the pack`);
      push(waitingOnOffset, e.baseOffset!, e);
    } else if (e.kind === REF_DELTA) push(waitingOnOid, e.baseOid!, e);
    else ready.push(e);
  }

  const external = new Map<string, BaseObject>();
  const inPack = new Set<string>();
  let resolved = 0;
  const settle = (e: Entry, type: GitObjectType, content: Buffer) => {
    e.type = type;
    e.content = content;
    e.oid = objectId(type, content);
    resolved++;
    inPack.add(e.oid);
    if (!byOid.has(e.oid)) byOid.set(e.oid, { type, content });
    for (const d of take(waitingOnOffset, e.offset)) ready.push(d);
    for (const d of take(waitingOnOid, e.oid)) ready.push(d);
  };
  const drain = () => {
    while (ready.length > 0) {
      const e = ready.pop()!;
      if (e.kind !== OFS_DELTA && e.kind !== REF_DELTA) settle(e, TYPES[e.kind]!, e.data);
      else {
        const base = e.kind === OFS_DELTA ? byOffset.get(e.baseOffset!)! : byOid.get(e.baseOid!)!;
        settle(e, base.type!, applyDelta(e.data, base.content!));
      }
    }
  };

  drain();
  // What is still waiting on an id no resolved object has is a base from outside: the local store's. An id the store
  // lacks may yet be an object of the pack waiting on another base, so it is set aside, not refused, until no read
  // helps; each id is read once, so this ends.
  const absent = new Set<string>();
  let baseBytes = 0;
  while (waitingOnOid.size > 0) {
    const oid = [...waitingOnOid.keys()].find((k) => !absent.has(k));
    if (oid === undefined)
      fail(
        `the pack names base ${[...absent][0]} that is neither in it nor in the local store (or its deltas form a cycle)`,
      );
    const base = await readBase(oid);
    if (!base) {
      absent.add(oid);
      continue;
    }
    // Each base is kept, and stored again in the pack: they count against what the fetch may inflate.
    baseBytes += base.object.byteLength;
    if (opts.maxBaseBytes !== undefined && baseBytes > opts.maxBaseBytes)
      throw new OperationError(
        'KS_GIT_PACK_TOO_LARGE',
        `the fetched pack's deltas name bases from the local store of more than ${opts.maxBaseBytes} bytes in all, past what a fetch may inflate`,
      );
    // A base must be the object named: the pack stored is only sound if the ids its deltas name are true.
    if (objectId(base.type, Buffer.from(base.object)) !== oid)
      fail(`the local store answered ${oid} with another object`);
    external.set(oid, base);
    byOid.set(oid, { type: base.type, content: Buffer.from(base.object) });
    for (const d of take(waitingOnOid, oid)) ready.push(d);
    drain();
  }
  if (resolved !== entries.length)
    fail(`${entries.length - resolved} deltas of the pack never resolve (a delta cycle)`);
  // A base read from the store that the pack turned out to hold itself is not added twice.
  for (const oid of inPack) external.delete(oid);
  if (external.size === 0) return input;

  const added = [...external.values()].map((b) => wholeEntry(b.type, Buffer.from(b.object)));
  const header = Buffer.alloc(PACK_HEADER);
  pack.copy(header, 0, 0, 8);
  header.writeUInt32BE(entries.length + added.length, 8);
  const body = Buffer.concat([header, ...added, pack.subarray(PACK_HEADER, pack.length - PACK_TRAILER)]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** Every entry of a pack, inflated: bounded by the pack itself (each inflation by the size its header states). */
function parsePack(pack: Buffer): Entry[] {
  const entries: Entry[] = [];
  walkPack(
    pack,
    fail,
    () => undefined,
    (h, data) => entries.push({ ...h, data }),
  );
  return entries;
}

/** Git's delta format: the base's size, the result's size, then copies from the base and inserted bytes. */
function applyDelta(delta: Buffer, base: Buffer): Buffer {
  let pos = 0;
  const varint = () => {
    let n = 0;
    let shift = 0;
    let byte: number;
    do {
      if (pos >= delta.length) fail('truncated delta');
      byte = delta[pos++]!;
      n += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return n;
  };
  if (varint() !== base.length) fail('a delta does not fit its base');
  const out = Buffer.alloc(varint());
  let at = 0;
  while (pos < delta.length) {
    const op = delta[pos++]!;
    if (op & 0x80) {
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset |= delta[pos++]! << (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) size |= delta[pos++]! << (8 * bit);
      offset >>>= 0;
      if (size === 0) size = 0x10000;
      if (offset + size > base.length || at + size > out.length) fail('a delta copies past its bounds');
      base.copy(out, at, offset, offset + size);
      at += size;
    } else if (op > 0) {
      if (pos + op > delta.length || at + op > out.length) fail('a delta inserts past its bounds');
      delta.copy(out, at, pos, pos + op);
      at += op;
      pos += op;
    } else fail('a delta holds the reserved opcode 0');
  }
  if (at !== out.length) fail('a delta does not produce the size it states');
  return out;
}

function objectId(type: GitObjectType, content: Buffer): string {
  return createHash('sha1').update(`${type} ${content.length}\0`).update(content).digest('hex');
}

/** A pack entry holding a whole object. */
function wholeEntry(type: GitObjectType, content: Buffer): Buffer {
  const head: number[] = [];
  let size = content.length;
  let byte = (TYPE_NUMBERS[type] << 4) | (size & 15);
  size = Math.floor(size / 16);
  while (size > 0) {
    head.push(byte | 0x80);
    byte = size & 0x7f;
    size = Math.floor(size / 128);
  }
  head.push(byte);
  return Buffer.concat([Buffer.from(head), deflateSync(content)]);
}

function push<K>(map: Map<K, Entry[]>, key: K, e: Entry): void {
  const list = map.get(key);
  if (list) list.push(e);
  else map.set(key, [e]);
}

function take<K>(map: Map<K, Entry[]>, key: K): Entry[] {
  const list = map.get(key) ?? [];
  map.delete(key);
  return list;
}
