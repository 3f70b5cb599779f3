// Unpacks a zip into a StagingTree with yauzl: yauzl reads the central directory and inflates (checking entry
// sizes); names are decoded and judged here, by the same rules as tar, and the entries are written here.
import type { Readable } from 'node:stream';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { openZip } from './open-zip.js';
import { ArtifactError, isArtifactError } from './artifact-error.js';
import { unsafeEntry, type EntryKind, type StagingTree } from './staging-tree.js';

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
const S_IFCHR = 0o020000;
const S_IFBLK = 0o060000;
const S_IFIFO = 0o010000;
const S_IFSOCK = 0o140000;
/** "Version made by" hosts whose external attributes carry a Unix mode: Unix and macOS. */
const UNIX_HOSTS = new Set([3, 19]);

/** Unpacks every entry of the zip at `archivePath` into `tree`, in central-directory order. */
export async function unpackZipInto(tree: StagingTree, archivePath: string): Promise<void> {
  let zip: ZipFile;
  try {
    zip = await openZip(archivePath, {
      lazyEntries: true,
      autoClose: false,
      // Names are decoded below with strict file names, then checked by the rules shared with tar, so that an
      // unsafe name is reported as such (with the entry) rather than as a generic yauzl error.
      decodeStrings: false,
      strictFileNames: true,
      validateEntrySizes: true,
    });
  } catch (e) {
    throw formatError(e);
  }
  // Errors are delivered to whoever waits in nextEntry; this keeps one emitted between reads from crashing.
  const swallow = (): void => {};
  zip.on('error', swallow);
  try {
    if (zip.entryCount > tree.limits.maxEntries)
      throw new ArtifactError('KS_UNPACK_TOO_LARGE', `the archive has ${zip.entryCount} entries, over the limit of ${tree.limits.maxEntries}`, {
        limit: tree.limits.maxEntries,
        received: zip.entryCount,
      });
    for (let entry = await nextEntry(zip); entry !== undefined; entry = await nextEntry(zip)) await unpackEntry(tree, zip, entry);
  } finally {
    zip.close();
    zip.off('error', swallow);
  }
}

async function unpackEntry(tree: StagingTree, zip: ZipFile, entry: Entry): Promise<void> {
  const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, true);
  const mode = UNIX_HOSTS.has(entry.versionMadeBy >> 8) ? entry.externalFileAttributes >>> 16 : 0;
  const kind = entryKind(name, mode);
  const planned = tree.plan(name, kind, kind === 'file' ? entry.uncompressedSize : 0);
  if (planned === undefined) return;
  if (planned.kind === 'directory') return tree.makeDirectory(planned);
  if (entry.isEncrypted()) throw new ArtifactError('KS_UNPACK_FORMAT', `zip entry "${name}" is encrypted`, { entry: name });
  let stream: Readable;
  try {
    stream = await zip.openReadStreamPromise(entry);
  } catch (e) {
    throw formatError(e, name);
  }
  // yauzl re-emits inflate and size-check errors on a later tick, after an early stop has destroyed the
  // stream and the reader has let go: without a listener they would be uncaught and take the agent down.
  // The reader sees every error that arrives while it reads (for-await listens too). One that arrives before it
  // starts (garbage deflate data, while a slow disk creates the file) is only emitted, not kept by the stream, which
  // then never ends: it is kept here and thrown when the reading starts, else the unpack would wait forever.
  let early: { error: unknown } | undefined;
  stream.on('error', (error: unknown) => void (early ??= { error }));
  try {
    await tree.writeFile(planned, formatErrorsOf(stream, name, () => early), (mode & 0o111) !== 0);
  } finally {
    stream.destroy();
  }
}

/** What a zip entry is, from its Unix mode when the archiver recorded one, else from a trailing slash. */
function entryKind(name: string, mode: number): EntryKind {
  switch (mode & S_IFMT) {
    case S_IFLNK:
      throw unsafeEntry(name, 'symlink');
    case S_IFCHR:
      throw unsafeEntry(name, 'character-device');
    case S_IFBLK:
      throw unsafeEntry(name, 'block-device');
    case S_IFIFO:
      throw unsafeEntry(name, 'fifo');
    case S_IFSOCK:
      throw unsafeEntry(name, 'socket');
    case S_IFDIR:
      return 'directory';
    case S_IFREG:
    case 0:
      return name.endsWith('/') ? 'directory' : 'file';
    default:
      throw unsafeEntry(name, 'unsupported-type', `mode ${(mode & S_IFMT).toString(8)}`);
  }
}

/** The next central-directory entry, or undefined at the end; yauzl's errors become `KS_UNPACK_FORMAT`. */
function nextEntry(zip: ZipFile): Promise<Entry | undefined> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
    };
    const onEntry = (e: Entry): void => (done(), resolve(e));
    const onEnd = (): void => (done(), resolve(undefined));
    const onError = (err: unknown): void => (done(), reject(formatError(err)));
    zip.on('entry', onEntry);
    zip.on('end', onEnd);
    zip.on('error', onError);
    zip.readEntry();
  });
}

/**
 * Passes the inflated bytes through, turning inflate and size-check failures into `KS_UNPACK_FORMAT`; `early` is an
 * error the stream emitted before the first read (checked in the same tick as the iterator starts listening).
 */
async function* formatErrorsOf(stream: Readable, name: string, early: () => { error: unknown } | undefined): AsyncGenerator<Uint8Array> {
  try {
    const before = early();
    if (before) throw before.error;
    for await (const chunk of stream) yield chunk as Uint8Array;
  } catch (e) {
    throw formatError(e, name);
  }
}

function formatError(err: unknown, name?: string): ArtifactError {
  if (isArtifactError(err)) return err;
  const where = name === undefined ? '' : ` (entry "${name}")`;
  return new ArtifactError('KS_UNPACK_FORMAT', `corrupt zip${where}: ${(err as Error).message}`, name === undefined ? {} : { entry: name }, {
    cause: err,
  });
}
