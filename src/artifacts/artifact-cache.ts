// The content-addressed artifact cache: `cacheDir/sha256/<hex>` only ever holds bytes whose sha256 is <hex>,
// and every use re-checks that, so disk corruption or tampering costs a re-fetch, never a bad install.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Where the verified bytes of `hex` live. */
export function cachePath(cacheDir: string, hex: string): string {
  return join(cacheDir, 'sha256', hex);
}

/** Where downloads in progress live: same filesystem as the cache, so the final rename is atomic. */
export function cacheTempDir(cacheDir: string): string {
  return join(cacheDir, 'tmp');
}

/**
 * The size of the cached copy of `hex` when it exists, is a regular file of at most `maxBytes` and still hashes
 * to `hex`; otherwise removes whatever is there and returns undefined (a miss).
 */
export async function readVerifiedCacheEntry(path: string, hex: string, maxBytes: number): Promise<number | undefined> {
  let size: number;
  try {
    const st = await lstat(path);
    if (!st.isFile() || st.size > maxBytes) throw new Error('unusable');
    size = st.size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    await rm(path, { recursive: true, force: true });
    return undefined;
  }
  if ((await sha256File(path)) === hex) return size;
  await rm(path, { force: true });
  return undefined;
}

/** sha256 of a file, streamed, as lower-case hex. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
