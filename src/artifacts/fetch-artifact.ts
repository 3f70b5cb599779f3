// SPEC §6: artifacts are verified against the signed sha256 before use. Bytes stream into a temp file while
// being hashed and counted; only a verified file is renamed to its digest's name in the cache.
import { createHash, type Hash } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, mkdtemp, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RepoReader } from '../source/repo-reader.js';
import { ArtifactError, isArtifactError } from './artifact-error.js';
import { cachePath, cacheTempDir, readVerifiedCacheEntry } from './artifact-cache.js';
import { redactUri, resolveArtifactSource, type ArtifactSource } from './artifact-source.js';
import { openHttpBody } from './http-download.js';

/** Inactivity allowed on an HTTP download before it fails; edge links are slow, but a dead one must not hang a reconcile. */
export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;

/** Progress callback: bytes received so far, and the announced total when known. */
export type ProgressFn = (received: number, total: number | undefined) => void;

/** Everything one fetch needs; `reader` serves repository-relative URIs from a directory or a commit alike. */
export interface FetchArtifactOptions {
  uri: string;
  sha256: string;
  /** The recipe's repository-relative path: relative URIs are resolved against its directory. */
  recipeFile: string;
  reader: RepoReader;
  cacheDir: string;
  maxBytes: number;
  onProgress?: ProgressFn;
  timeoutMs?: number;
}

/** A verified artifact: `path` is its cache entry, to be read, never written. */
export interface FetchedArtifact {
  path: string;
  /** True when it was served from the cache, without touching the network or the repository. */
  cached: boolean;
  bytes: number;
}

/** Returns the cached copy of the artifact, or fetches, verifies and caches it. Throws ArtifactError. */
export async function fetchArtifact(opts: FetchArtifactOptions): Promise<FetchedArtifact> {
  const uri = redactUri(opts.uri);
  const hex = opts.sha256.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex))
    throw new ArtifactError('KS_ARTIFACT_UNSIGNED', `artifact ${uri} has no valid sha256 digest ("${opts.sha256}")`, { uri });
  const source = resolveArtifactSource(opts.uri, opts.recipeFile);
  const final = cachePath(opts.cacheDir, hex);

  const hit = await readVerifiedCacheEntry(final, hex, opts.maxBytes);
  if (hit !== undefined) return { path: final, cached: true, bytes: hit };

  await mkdir(dirname(final), { recursive: true });
  await mkdir(cacheTempDir(opts.cacheDir), { recursive: true });
  // A directory per download: a crash leaves only this behind, never a partial file under a digest's name.
  const tmpDir = await mkdtemp(join(cacheTempDir(opts.cacheDir), `${hex.slice(0, 16)}-`));
  try {
    const tmp = join(tmpDir, 'data');
    const { bytes, digest } = await receive(source, tmp, opts, uri);
    if (digest !== hex)
      throw new ArtifactError('KS_ARTIFACT_DIGEST_MISMATCH', `artifact ${uri} has sha256 ${digest}, but the recipe signs ${hex}`, {
        uri,
        expected: hex,
        actual: digest,
        received: bytes,
      });
    await rename(tmp, final);
    return { path: final, cached: false, bytes };
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

/** Copies the artifact's bytes into `tmp` (durably), hashing and counting them on the way. */
async function receive(source: ArtifactSource, tmp: string, opts: FetchArtifactOptions, uri: string): Promise<{ bytes: number; digest: string }> {
  const out = await open(tmp, 'wx', 0o644);
  try {
    const meter = new Meter(opts.maxBytes, uri, opts.onProgress);
    const { body, total, close } = await openSource(source, opts, uri);
    meter.total = total;
    try {
      await pipeline(body, meter, async (chunks: AsyncIterable<Buffer>) => {
        for await (const chunk of chunks) await writeAll(out, chunk);
      });
    } catch (e) {
      if (isArtifactError(e)) throw e;
      throw new ArtifactError('KS_ARTIFACT_FETCH_FAILED', `reading ${uri} failed: ${(e as Error).message}`, { uri }, { cause: e });
    } finally {
      await close();
    }
    await out.sync(); // the content must be on disk before its name is
    return { bytes: meter.received, digest: meter.digest() };
  } finally {
    await out.close();
  }
}

interface OpenedSource {
  body: Readable;
  total: number | undefined;
  close(): Promise<void>;
}

async function openSource(source: ArtifactSource, opts: FetchArtifactOptions, uri: string): Promise<OpenedSource> {
  const tooLarge = (size: number): ArtifactError =>
    new ArtifactError('KS_ARTIFACT_TOO_LARGE', `artifact ${uri} is ${size} bytes, over the limit of ${opts.maxBytes}`, {
      uri,
      limit: opts.maxBytes,
      received: size,
    });
  switch (source.kind) {
    case 'repository': {
      const r = await opts.reader.readFile(source.path, opts.maxBytes);
      if (!r.ok) {
        const code =
          r.code === 'KS_FILE_TOO_LARGE' ? 'KS_ARTIFACT_TOO_LARGE' : r.code === 'KS_PATH_ESCAPE' ? 'KS_ARTIFACT_BAD_URI' : 'KS_ARTIFACT_NOT_FOUND';
        throw new ArtifactError(code, `artifact ${uri} (${opts.reader.label}): ${r.message}`, { uri });
      }
      return { body: Readable.from([Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength)]), total: r.bytes.byteLength, close: async () => {} };
    }
    case 'file': {
      let fh: FileHandle;
      try {
        // O_NONBLOCK: opening a fifo must not hang; it is then refused as not a regular file.
        fh = await open(source.path, constants.O_RDONLY | constants.O_NONBLOCK);
      } catch (e) {
        throw new ArtifactError('KS_ARTIFACT_NOT_FOUND', `artifact ${uri} cannot be opened: ${(e as Error).message}`, { uri }, { cause: e });
      }
      try {
        const st = await fh.stat();
        if (!st.isFile()) throw new ArtifactError('KS_ARTIFACT_NOT_FOUND', `artifact ${uri} is not a regular file`, { uri });
        if (st.size > opts.maxBytes) throw tooLarge(st.size);
        return { body: fh.createReadStream({ autoClose: false }), total: st.size, close: () => fh.close() };
      } catch (e) {
        await fh.close();
        throw e;
      }
    }
    case 'http': {
      const timeoutMs = opts.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
      const { body, total } = await openHttpBody(source.url, { maxBytes: opts.maxBytes, timeoutMs });
      return {
        body,
        total,
        close: async () => {
          body.destroy();
        },
      };
    }
  }
}

/** Hashes and counts bytes in flight; fails the moment the count passes the limit, whatever was announced. */
class Meter extends Transform {
  received = 0;
  total: number | undefined;
  private readonly hash: Hash = createHash('sha256');

  constructor(
    private readonly maxBytes: number,
    private readonly uri: string,
    private readonly onProgress?: ProgressFn,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.maxBytes)
      return cb(
        new ArtifactError('KS_ARTIFACT_TOO_LARGE', `artifact ${this.uri} is over the limit of ${this.maxBytes} bytes`, {
          uri: this.uri,
          limit: this.maxBytes,
          received: this.received,
        }),
      );
    this.hash.update(chunk);
    this.onProgress?.(this.received, this.total);
    cb(null, chunk);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

async function writeAll(fh: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) offset += (await fh.write(chunk, offset, chunk.length - offset)).bytesWritten;
}
