// Which unpacker an archive needs, decided by its magic bytes: a file's name (or a URL's) is not evidence.
import { open } from 'node:fs/promises';
import { ArtifactError } from './artifact-error.js';

/** The formats SPEC §2 allows for `unpack = true`. */
export type ArchiveFormat = 'tar' | 'tar.gz' | 'zip';

/** One tar header block. */
export const TAR_BLOCK = 512;

/** Reads the first block of `path` and names its format; anything else is `KS_UNPACK_FORMAT`. */
export async function sniffArchiveFormat(path: string): Promise<ArchiveFormat> {
  const fh = await open(path, 'r');
  let head: Buffer;
  try {
    const buf = Buffer.alloc(TAR_BLOCK);
    const { bytesRead } = await fh.read(buf, 0, TAR_BLOCK, 0);
    head = buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz';
  // Local file header, or the end-of-central-directory record of an empty zip.
  if (head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && ((head[2] === 3 && head[3] === 4) || (head[2] === 5 && head[3] === 6)))
    return 'zip';
  if (isTarHeader(head)) return 'tar';
  throw new ArtifactError('KS_UNPACK_FORMAT', 'not a tar, tar.gz/tgz or zip archive (unrecognized leading bytes)');
}

/** True when `block` is a tar header with a valid checksum (ustar, GNU and v7 tar all have one). */
export function isTarHeader(block: Uint8Array): boolean {
  if (block.length < TAR_BLOCK) return false;
  const field = Buffer.from(block.subarray(148, 156)).toString('latin1').replace(/[\0 ]+$/, '').replace(/^ +/, '');
  if (!/^[0-7]{1,7}$/.test(field)) return false;
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] as number);
  return sum === parseInt(field, 8);
}
