// Unpacks a tar or tar.gz into a StagingTree. node-tar parses (strictly); this module decides and writes, so an
// unsafe entry fails the unpack instead of being skipped with a warning, and every byte on disk is counted.
import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { ArtifactError, isArtifactError } from './artifact-error.js';
import { isTarHeader, TAR_BLOCK } from './archive-format.js';
import { unsafeEntry, type EntryKind, type PlannedEntry, type StagingTree } from './staging-tree.js';

/**
 * Headroom per entry for what a tar stream holds besides file bodies (header, padding, pax or GNU long-name
 * records for paths up to maxPathLength), plus the end-of-archive record. Bounds the decompressed stream, so a
 * gzip stream that inflates forever past the end of the archive is cut off rather than decompressed to the end.
 */
export const TAR_OVERHEAD_PER_ENTRY = 16 * 1024;

/** Streams `archivePath` (gunzipping when `gzip`) into `tree`; resolves when every entry is on disk. */
export function unpackTarInto(tree: StagingTree, archivePath: string, gzip: boolean): Promise<void> {
  const { limits } = tree;
  const streamLimit = limits.maxTotalBytes + (limits.maxEntries + 1) * TAR_OVERHEAD_PER_ENTRY;

  return new Promise<void>((resolve, reject) => {
    let failure: unknown;
    let chain: Promise<void> = Promise.resolve();
    let current: ReadEntry | undefined;
    const stop = new AbortController();
    const plans = new WeakMap<ReadEntry, PlannedEntry | undefined>();

    const source = createReadStream(archivePath);
    const gunzip = gzip ? createGunzip() : undefined;
    const guard = new TarStreamGuard(streamLimit);
    const parser = new Parser({
      strict: true,
      // Refuse, do not skip: the first unsafe entry fails the whole unpack.
      filter: (_path, entry) => {
        if (failure !== undefined) return false;
        const e = entry as ReadEntry;
        try {
          const kind = entryKind(e);
          plans.set(e, tree.plan(e.path, kind, kind === 'file' ? e.size : 0));
          return true;
        } catch (err) {
          fail(err);
          return false;
        }
      },
    });

    const fail = (err: unknown): void => {
      if (failure !== undefined) return;
      failure = err;
      stop.abort(err);
      source.destroy();
      gunzip?.destroy();
      guard.destroy();
      current?.destroy();
      // Aborting makes the parser emit 'error'; it is ignored below because `failure` is already set.
      parser.abort(new Error('unpack aborted'));
      // Settle only after the write in flight (if any) has stopped, so the caller can remove the staging tree.
      void chain.then(() => reject(failure));
    };

    const formatError = (err: unknown, what: string): ArtifactError =>
      isArtifactError(err)
        ? err
        : new ArtifactError('KS_UNPACK_FORMAT', `corrupt ${what}: ${(err as Error).message}`, {}, { cause: err });

    const write = async (entry: ReadEntry): Promise<void> => {
      if (failure !== undefined) return;
      const planned = plans.get(entry);
      if (planned === undefined || planned.kind === 'directory') {
        entry.resume(); // a GNU dump-dir record may carry a body: drain it so parsing goes on
        if (planned !== undefined) await tree.makeDirectory(planned);
        return;
      }
      current = entry;
      try {
        await tree.writeFile(planned, entry, ((entry.mode ?? 0) & 0o111) !== 0, stop.signal);
      } finally {
        current = undefined;
      }
    };

    parser.on('entry', (entry: ReadEntry) => {
      chain = chain.then(() => write(entry)).catch(fail);
    });
    parser.on('ignoredEntry', (entry: ReadEntry) => {
      fail(
        entry.meta
          ? new ArtifactError('KS_UNPACK_FORMAT', `corrupt tar: an oversized ${entry.type} record`)
          : unsafeEntry(entry.path, 'unsupported-type', `tar type ${entry.type}`),
      );
    });
    parser.on('error', (err: unknown) => fail(formatError(err, 'tar')));
    parser.on('end', () => {
      void chain.then(() => {
        if (failure === undefined) resolve();
      });
    });
    source.on('error', fail);
    gunzip?.on('error', (err) => fail(formatError(err, 'gzip stream')));
    guard.on('error', fail);

    const decompressed = gunzip ? source.pipe(gunzip) : source;
    decompressed.pipe(guard).pipe(parser as unknown as NodeJS.WritableStream);
  });
}

/** Maps a tar entry type to what may be created, refusing links, devices, fifos and anything unknown. */
function entryKind(e: ReadEntry): EntryKind {
  switch (e.type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return 'file';
    case 'Directory':
    case 'GNUDumpDir':
      return 'directory';
    case 'SymbolicLink':
      throw unsafeEntry(e.path, 'symlink', `to "${e.linkpath ?? ''}"`);
    case 'Link':
      throw unsafeEntry(e.path, 'hardlink', `to "${e.linkpath ?? ''}"`);
    case 'CharacterDevice':
      throw unsafeEntry(e.path, 'character-device');
    case 'BlockDevice':
      throw unsafeEntry(e.path, 'block-device');
    case 'FIFO':
      throw unsafeEntry(e.path, 'fifo');
    default:
      throw unsafeEntry(e.path, 'unsupported-type', `tar type ${String(e.type)}`);
  }
}

/**
 * Sits between the decompressor and the parser: checks that the (decompressed) stream starts with a tar
 * header, so a gzip of something else is a format error, and cuts the stream off past `limit` bytes.
 */
class TarStreamGuard extends Transform {
  private seen = 0;
  private head: Buffer | undefined = Buffer.alloc(0);

  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit)
      return cb(
        new ArtifactError('KS_UNPACK_TOO_LARGE', `the tar stream inflates past ${this.limit} bytes`, {
          limit: this.limit,
          received: this.seen,
        }),
      );
    if (this.head !== undefined) {
      this.head = Buffer.concat([this.head, chunk.subarray(0, TAR_BLOCK - this.head.length)]);
      if (this.head.length >= TAR_BLOCK) {
        if (!isTarHeader(this.head)) return cb(notTar());
        this.head = undefined;
      }
    }
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    cb(this.head !== undefined ? notTar() : null);
  }
}

function notTar(): ArtifactError {
  return new ArtifactError('KS_UNPACK_FORMAT', 'the archive does not start with a valid tar header');
}
