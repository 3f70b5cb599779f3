// Keeps the notes cache (`<state-dir>/notes.git`, git-notes-reporter.ts) bounded. Each report adds a notes commit,
// its new trees and its note as loose objects, and nothing ever removed one: isomorphic-git has no gc, so the cache
// held every notes commit the device ever made, and grew with every poll an unsigned commit is reported at (238 MiB
// after 3,000 reports with the flat trees of before; issue 28). The server keeps the history; the device needs only
// its tip to build the next notes commit on. So once the cache has grown by `growthBytes` since it was last made
// small, it is compacted in place:
//   1. the tip commit and every object of its tree are written as one pack (+ index), beside what is there;
//   2. the tip is marked shallow, so no walk of the history (isomorphic-git's, the push's) looks past it;
//   3. every other pack and loose object is deleted.
// Each step leaves a readable cache if the agent dies after it: the objects kept are in the new pack before anything
// is deleted. It runs only when the server holds the tip (the last push went through): a line not pushed yet needs its
// commits for the push, and waits for it.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import { resolveRefIfAny } from './notes-tree.js';

export interface NotesCacheBoundOptions {
  /** Growth in bytes on disk since the last compaction (or the start) that makes the next check compact; default 4 MiB. */
  growthBytes?: number;
  /** Deliveries between two measurements of the cache (one walk of its directory each); default 16. */
  checkEvery?: number;
}

export const DEFAULT_CACHE_GROWTH_BYTES = 4 << 20;
const TMP = 'keystone-compact';

/** One cache's compaction schedule: the reporter calls after() once per delivery that went through. */
export class NotesCacheBound {
  private readonly growthBytes: number;
  private readonly checkEvery: number;
  private deliveries = 0;
  /** The cache's size as the last compaction left it (0 until one ran: the first check measures a cache of old). */
  private floor = 0;

  constructor(opts: NotesCacheBoundOptions = {}) {
    this.growthBytes = opts.growthBytes ?? DEFAULT_CACHE_GROWTH_BYTES;
    this.checkEvery = Math.max(1, opts.checkEvery ?? 16);
  }

  /** Compacts the cache if it grew past the bound and the server holds `ref`'s tip (`tracking` says it does). */
  async after(gitdir: string, ref: string, tracking: string): Promise<boolean> {
    if (this.deliveries++ % this.checkEvery !== 0) return false;
    if (cacheBytes(gitdir) <= this.floor + this.growthBytes) return false;
    const tip = await resolveRefIfAny(gitdir, ref);
    if (tip === undefined || tip !== (await resolveRefIfAny(gitdir, tracking))) return false;
    await compactNotesCache(gitdir, tip);
    // Measured, not assumed: a tree larger than the bound must not make every check compact again.
    this.floor = cacheBytes(gitdir);
    return true;
  }
}

/** Bytes `dir` takes on disk (allocated blocks, as `du` counts), everything below it included. */
export function cacheBytes(dir: string): number {
  let total = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += cacheBytes(path);
    else {
      const st = fs.lstatSync(path, { throwIfNoEntry: false });
      if (st) total += st.blocks ? st.blocks * 512 : st.size;
    }
  }
  return total;
}

/** Leaves in `gitdir` the commit `tip` and its tree (one pack), and nothing else; `tip` is marked shallow. */
export async function compactNotesCache(gitdir: string, tip: string): Promise<void> {
  const cache = {};
  const packfile = await packOf(gitdir, await reachable(gitdir, tip, cache), cache);
  const filename = `pack-${packfile.subarray(-20).toString('hex')}.pack`;
  const tmp = join(gitdir, TMP);
  await fs.promises.rm(tmp, { recursive: true, force: true });
  await fs.promises.mkdir(tmp, { recursive: true });
  const idxName = filename.replace(/\.pack$/, '.idx');
  await writeSynced(join(tmp, filename), packfile);
  await git.indexPack({ fs, dir: tmp, gitdir, filepath: filename, cache });
  await fsync(join(tmp, idxName));
  const packDir = join(gitdir, 'objects', 'pack');
  await fs.promises.mkdir(packDir, { recursive: true });
  // The pack before its index: readers find packs by their index.
  await fs.promises.rename(join(tmp, filename), join(packDir, filename));
  await fs.promises.rename(join(tmp, idxName), join(packDir, idxName));
  await fsync(packDir);

  const { commit } = await git.readCommit({ fs, gitdir, oid: tip, cache });
  const shallow = join(gitdir, 'shallow');
  if (commit.parent.length > 0) {
    await writeSynced(join(tmp, 'shallow'), Buffer.from(`${tip}\n`));
    await fs.promises.rename(join(tmp, 'shallow'), shallow);
  } else await fs.promises.rm(shallow, { force: true });

  // Now nothing but the new pack is needed: indexes before their packs, then the loose objects.
  const keep = new Set([filename, idxName]);
  const packs = (await fs.promises.readdir(packDir)).filter((f) => !keep.has(f));
  for (const f of packs.filter((x) => x.endsWith('.idx'))) await fs.promises.rm(join(packDir, f), { force: true });
  for (const f of packs.filter((x) => !x.endsWith('.idx'))) await fs.promises.rm(join(packDir, f), { force: true });
  const objects = join(gitdir, 'objects');
  for (const d of await fs.promises.readdir(objects))
    if (/^[0-9a-f]{2}$/.test(d)) await fs.promises.rm(join(objects, d), { recursive: true, force: true });
  await fs.promises.rm(tmp, { recursive: true, force: true });
}

/** The commit `tip` and every object of its tree. */
async function reachable(gitdir: string, tip: string, cache: object): Promise<string[]> {
  const out = new Set<string>([tip]);
  const { commit } = await git.readCommit({ fs, gitdir, oid: tip, cache });
  const queue = [commit.tree];
  while (queue.length) {
    const tree = queue.pop() as string;
    if (out.has(tree)) continue;
    out.add(tree);
    for (const e of (await git.readTree({ fs, gitdir, oid: tree, cache })).tree) {
      if (e.type === 'tree') queue.push(e.oid);
      else if (e.type === 'blob') out.add(e.oid);
    }
  }
  return [...out];
}

const TYPE_NUMBER: Record<string, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

/**
 * A pack of whole objects. Written here, not by isomorphic-git's packObjects: that deflates each object through an
 * async stream, 5 of the 7 s a compaction of 10,000 notes took; zlib's synchronous deflate takes a fraction of that.
 */
async function packOf(gitdir: string, oids: readonly string[], cache: object): Promise<Buffer> {
  const head = Buffer.alloc(12);
  head.write('PACK', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(oids.length, 8);
  const parts: Buffer[] = [head];
  for (const oid of oids) {
    const { type, object } = await git.readObject({ fs, gitdir, oid, format: 'content', cache });
    const data = object as Uint8Array;
    // The entry's header: type and size, four bits then seven at a time, least significant first.
    const header = [((TYPE_NUMBER[type] ?? 0) << 4) | (data.length & 15)];
    for (let rest = Math.floor(data.length / 16); rest > 0; rest = Math.floor(rest / 128)) {
      header[header.length - 1]! |= 0x80;
      header.push(rest & 0x7f);
    }
    parts.push(Buffer.from(header), deflateSync(data));
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

async function writeSynced(path: string, data: Uint8Array): Promise<void> {
  const fh = await fs.promises.open(path, 'w');
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function fsync(path: string): Promise<void> {
  const fh = await fs.promises.open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
