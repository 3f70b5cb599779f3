// The write side of every unpack: one policy for tar and zip alike, so an archive can only ever create regular
// files and directories, inside a fresh staging directory, within the limits.
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactError, type UnsafeEntryReason } from './artifact-error.js';
import type { UnpackLimits } from './unpack-limits.js';

/** The only two things an archive may create. Links, devices, fifos and sockets are refused before this point. */
export type EntryKind = 'file' | 'directory';

/** An entry that passed every check and may be written; `rel` is its normalized path below the staging root. */
export interface PlannedEntry {
  readonly name: string;
  readonly kind: EntryKind;
  readonly parts: readonly string[];
  readonly rel: string;
}

/** Longest single path component Linux filesystems accept; longer ones are refused up front, not by ENAMETOOLONG. */
const MAX_COMPONENT_BYTES = 255;

/** Builds the `KS_UNPACK_UNSAFE_ENTRY` error, so every driver names the entry and the attack the same way. */
export function unsafeEntry(name: string, reason: UnsafeEntryReason, detail = ''): ArtifactError {
  return new ArtifactError(
    'KS_UNPACK_UNSAFE_ENTRY',
    `archive entry "${printable(name)}" is refused: ${reason.replaceAll('-', ' ')}${detail ? ` (${detail})` : ''}`,
    { entry: name, reason },
  );
}

/**
 * Splits an archive entry name into path components, refusing anything that could land outside the staging
 * directory. Checks the name as stored, before any library normalizes it, so nothing is silently rewritten.
 */
export function entryPathParts(name: string, limits: Pick<UnpackLimits, 'maxDepth' | 'maxPathLength'>): string[] {
  if (name.includes('\0')) throw unsafeEntry(name, 'nul-byte');
  if (name.includes('\\')) throw unsafeEntry(name, 'backslash', 'a Windows path separator');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw unsafeEntry(name, 'absolute-path');
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw unsafeEntry(name, 'parent-directory', 'a ".." component');
  if (Buffer.byteLength(name) > limits.maxPathLength)
    throw unsafeEntry(name, 'path-too-long', `over ${limits.maxPathLength} bytes`);
  if (parts.some((p) => Buffer.byteLength(p) > MAX_COMPONENT_BYTES))
    throw unsafeEntry(name, 'path-too-long', `a component over ${MAX_COMPONENT_BYTES} bytes`);
  if (parts.length > limits.maxDepth)
    throw new ArtifactError(
      'KS_UNPACK_TOO_DEEP',
      `archive entry "${printable(name)}" is ${parts.length} levels deep, over the limit of ${limits.maxDepth}`,
      { entry: name, depth: parts.length, limit: limits.maxDepth },
    );
  return parts;
}

/** File permissions come from the archive's execute bits only: never setuid, setgid, sticky or world-writable. */
export function fileMode(executable: boolean): number {
  return executable ? 0o755 : 0o644;
}

/** Directories are always 0o755, whatever the archive says. */
export const DIRECTORY_MODE = 0o755;

/**
 * A staging directory being filled from an archive. `plan` is synchronous and runs in archive order, so a bad
 * entry is refused before anything after it is parsed; the writes then create each file exclusively
 * (O_EXCL|O_NOFOLLOW) and count the bytes actually written, whatever the headers claimed.
 */
export class StagingTree {
  private entries = 0;
  private claimed = 0;
  private written = 0;
  /** What each planned path (and each implied parent) is, to refuse duplicates and file/directory clashes. */
  private readonly kinds = new Map<string, EntryKind>();
  /** Directories that exist on disk, relative to the root ('' is the root, created by the caller). */
  private readonly made = new Set<string>(['']);

  constructor(
    readonly root: string,
    readonly limits: UnpackLimits,
  ) {}

  /** Entries planned so far (files and directories). */
  get entryCount(): number {
    return this.entries;
  }

  /** Bytes actually written to files so far. */
  get bytesWritten(): number {
    return this.written;
  }

  /**
   * Checks one entry against every rule and limit; throws an ArtifactError when it is refused. Returns undefined
   * for an entry naming the staging root itself (`./`), which has nothing to create.
   */
  plan(name: string, kind: EntryKind, claimedBytes = 0): PlannedEntry | undefined {
    this.entries++;
    if (this.entries > this.limits.maxEntries)
      throw new ArtifactError('KS_UNPACK_TOO_LARGE', `the archive has more than ${this.limits.maxEntries} entries`, {
        limit: this.limits.maxEntries,
        received: this.entries,
        entry: name,
      });
    const parts = entryPathParts(name, this.limits);
    if (parts.length === 0) {
      if (kind === 'directory') return undefined;
      throw unsafeEntry(name, 'empty-name', 'a file entry naming the archive root');
    }
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      const seen = this.kinds.get(parent);
      if (seen === 'file') throw unsafeEntry(name, 'file-directory-conflict', `"${parent}" is a file`);
      if (seen === undefined) this.kinds.set(parent, 'directory');
    }
    const rel = parts.join('/');
    const seen = this.kinds.get(rel);
    if (seen === 'file' && kind === 'file') throw unsafeEntry(name, 'duplicate', `"${rel}" appears twice`);
    if (seen !== undefined && seen !== kind)
      throw unsafeEntry(name, 'file-directory-conflict', `"${rel}" is both a file and a directory`);
    this.kinds.set(rel, kind);
    if (kind === 'file') {
      if (!Number.isFinite(claimedBytes) || claimedBytes < 0) claimedBytes = 0;
      this.claimed += claimedBytes;
      // Headers are not trusted to be small, but a header that admits to being large is refused at once.
      if (this.claimed > this.limits.maxTotalBytes) throw this.tooLarge(this.claimed, name, 'declares');
    }
    return { name, kind, parts, rel };
  }

  /** Creates a planned directory (and its parents). */
  async makeDirectory(entry: PlannedEntry): Promise<void> {
    await this.ensureDirectoriesFor(entry.parts, entry.parts.length);
  }

  /**
   * Writes a planned file from `data`, counting every byte: the write stops before the byte that would pass
   * maxTotalBytes. `signal` lets the driver stop a write when another part of the unpack failed.
   */
  async writeFile(entry: PlannedEntry, data: AsyncIterable<Uint8Array>, executable: boolean, signal?: AbortSignal): Promise<number> {
    await this.ensureDirectoriesFor(entry.parts, entry.parts.length - 1);
    signal?.throwIfAborted();
    const mode = fileMode(executable);
    const fh = await open(
      join(this.root, entry.rel),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    );
    let bytes = 0;
    try {
      for await (const chunk of data) {
        if (this.written + chunk.length > this.limits.maxTotalBytes)
          throw this.tooLarge(this.written + chunk.length, entry.name, 'expands to');
        this.written += chunk.length;
        bytes += chunk.length;
        await writeAll(fh, chunk);
        signal?.throwIfAborted();
      }
      await fh.chmod(mode); // the umask may have removed bits; the result must not depend on it
    } finally {
      await fh.close();
    }
    return bytes;
  }

  private tooLarge(bytes: number, name: string, verb: string): ArtifactError {
    return new ArtifactError(
      'KS_UNPACK_TOO_LARGE',
      `the archive ${verb} more than ${this.limits.maxTotalBytes} bytes (at entry "${printable(name)}")`,
      { limit: this.limits.maxTotalBytes, received: bytes, entry: name },
    );
  }

  /** Creates parts[0..count) one level at a time, never recursively: if the root was removed, this fails. */
  private async ensureDirectoriesFor(parts: readonly string[], count: number): Promise<void> {
    for (let i = 1; i <= count; i++) {
      const rel = parts.slice(0, i).join('/');
      if (this.made.has(rel)) continue;
      const abs = join(this.root, rel);
      try {
        await mkdir(abs, { mode: DIRECTORY_MODE });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !(await lstat(abs)).isDirectory()) throw e;
      }
      await chmod(abs, DIRECTORY_MODE);
      this.made.add(rel);
    }
  }
}

async function writeAll(fh: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await fh.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

/** Entry names are attacker-chosen: escape control characters before they reach a terminal or a log. */
function printable(name: string): string {
  // eslint-disable-next-line no-control-regex
  const s = name.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return s.length > 200 ? s.slice(0, 200) + '…' : s;
}
