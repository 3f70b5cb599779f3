// The contract of an unpack (SPEC §6), judged after each input: a fresh destination that holds only regular files
// and directories within the limits, or an ArtifactError with a KS_UNPACK_ code and nothing left behind at all.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, lstat, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isArtifactError } from '../../src/artifacts/artifact-error.js';
import { sniffArchiveFormat } from '../../src/artifacts/archive-format.js';
import { unpackArchive } from '../../src/artifacts/unpack-archive.js';
import { unpackTarInto } from '../../src/artifacts/unpack-tar.js';
import { unpackZipInto } from '../../src/artifacts/unpack-zip.js';
import type { UnpackLimits } from '../../src/artifacts/unpack-limits.js';
import { StagingTree, type PlannedEntry } from '../../src/artifacts/staging-tree.js';
import { holds, refusedWith, type Outcome } from './fuzz-target.js';

/** Small, so that inputs of a few KB reach every limit. */
export const FUZZ_LIMITS: UnpackLimits = { maxEntries: 64, maxTotalBytes: 256 * 1024, maxDepth: 6, maxPathLength: 200 };

/** What is under `dir`: every path's kind and the bytes of its files. */
async function walk(dir: string, rel = ''): Promise<{ entries: number; bytes: number }> {
  let entries = 0;
  let bytes = 0;
  for (const name of await readdir(join(dir, rel))) {
    const p = rel ? `${rel}/${name}` : name;
    const st = await lstat(join(dir, p));
    holds(st.isFile() || st.isDirectory(), `the unpack created ${p}, neither a file nor a directory`);
    holds(
      (st.mode & 0o7022) === 0,
      `${p} has mode ${(st.mode & 0o7777).toString(8)} (setuid, setgid, sticky or writable by others)`,
    );
    entries++;
    if (st.isFile()) bytes += st.size;
    else {
      const sub = await walk(dir, p);
      entries += sub.entries;
      bytes += sub.bytes;
    }
  }
  return { entries, bytes };
}

/**
 * A staging tree on a slow disk: each file is created a few ms late, so the archive reader runs ahead of the writer
 * (a zip's inflate error arriving before anyone reads the entry hung the unpack: see fuzz-regressions.test.ts).
 */
export class SlowDiskTree extends StagingTree {
  override async writeFile(
    entry: PlannedEntry,
    data: AsyncIterable<Uint8Array>,
    executable: boolean,
    signal?: AbortSignal,
  ): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return super.writeFile(entry, data, executable, signal);
  }
}

/** Half of the inputs (by their hash, so that a replay does the same) are also unpacked onto a slow disk. */
const onSlowDiskToo = (input: Uint8Array) => (createHash('sha256').update(input).digest()[0]! & 1) === 1;

/** What unpackArchive does between sniffing and moving into place, on a tree given here. */
async function unpackInto(tree: StagingTree, archivePath: string): Promise<void> {
  const format = await sniffArchiveFormat(archivePath);
  if (format === 'zip') await unpackZipInto(tree, archivePath);
  else await unpackTarInto(tree, archivePath, format === 'tar.gz');
}

/** A scratch directory per target: one archive file and one destination at a time. */
export class ArchiveScratch {
  private dir = '';
  private n = 0;

  async setup(): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), 'keystone-fuzz-unpack-'));
  }

  async teardown(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  /** `slowDisk`: unpack onto a SlowDiskTree as well (the regression tests always do). */
  async check(input: Uint8Array, slowDisk = onSlowDiskToo(input)): Promise<Outcome> {
    if (!this.dir) await this.setup(); // a replay without setup
    const run = join(this.dir, String(this.n++));
    const archive = `${run}.archive`;
    const dest = join(run, 'dest');
    await writeFile(archive, input);
    try {
      let result;
      try {
        result = await unpackArchive(archive, dest, FUZZ_LIMITS);
      } catch (e) {
        refusedWith(e, (x) => isArtifactError(x) && x.code.startsWith('KS_UNPACK_'));
        // Refused: the destination was never created and no staging directory is left beside it.
        const left = await readdir(run).catch(() => []);
        holds(left.length === 0, `a refused unpack left ${left.join(', ')} behind`);
        return 'refused';
      }
      const found = await walk(dest);
      holds(found.bytes === result.bytes, `the unpack reports ${result.bytes} bytes, ${found.bytes} are on disk`);
      holds(found.bytes <= FUZZ_LIMITS.maxTotalBytes, `${found.bytes} bytes on disk, over the limit`);
      holds(
        result.entries <= FUZZ_LIMITS.maxEntries &&
          found.entries <= FUZZ_LIMITS.maxEntries + FUZZ_LIMITS.maxEntries * FUZZ_LIMITS.maxDepth,
        `${result.entries} entries, over the limit`,
      );
      const left = await readdir(run);
      holds(left.length === 1 && left[0] === 'dest', `the unpack left ${left.join(', ')} beside the destination`);
      return 'accepted';
    } finally {
      if (slowDisk) await this.onSlowDisk(archive, join(run, 'slow'));
      await rm(run, { recursive: true, force: true });
      await rm(archive, { force: true });
    }
  }

  /** The same archive by its format's unpacker onto a slow disk: it must settle too, with a coded error if any. */
  private async onSlowDisk(archive: string, root: string): Promise<void> {
    await mkdir(root, { recursive: true });
    try {
      await unpackInto(new SlowDiskTree(root, FUZZ_LIMITS), archive);
    } catch (e) {
      refusedWith(e, (x) => isArtifactError(x) && x.code.startsWith('KS_UNPACK_'));
    }
  }
}
