// Thin packs for isomorphic-git's fetch, completed before the library sees them (thin-pack.ts says why). The library
// leaves `thin-pack` out of its requests; without it a shallow fetch (`deepen 1`) makes git send the new commit's whole
// tree even when the previous commit is a "have": 17.5 kB instead of 0.5 kB for one changed file in a 100-file
// repository (bench/git-sync.bench.mjs). So, on the HTTP client a fetch goes through:
//   - the ref advertisement (GET info/refs) is read for the server's capabilities: thin packs are only asked of a
//     server that offers both `thin-pack` and a side band (whose framing this file rewrites);
//   - the upload-pack request gets `thin-pack` added to the capabilities of its first `want` line, and `no-progress`
//     when offered (the library asks for progress, which cost as many bytes as the pack of one commit, unread);
//   - the response's pack (side band 1) is gathered, completed against the local store, and handed on re-framed, with
//     the lines before it (shallow, ACK/NAK) unchanged. Progress (band 2) is dropped: nothing here shows it.
// Every fetch's pack, thin or not, side band or not, is first walked for what it inflates to (pack-inflation.ts) and
// refused past the limits before the library, which inflates all of it to index it, ever sees it.
// The byte budget sits beneath this client, so it counts what crossed the wire, not the completed pack.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import git, { type GitHttpRequest, type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { pruneHistoryPack } from './history-pack.js';
import { checkPackInflation, PACK_INFLATION_LIMITS, type PackInflationLimits } from './pack-inflation.js';
import { completeThinPack, type ReadBase } from './thin-pack.js';

/** Largest side-band-64k data line: 65520 bytes, less the length and the band byte. */
const MAX_BAND_DATA = 65520 - 5;
const FLUSH = Buffer.from('0000');

export interface ThinPackHttpOptions {
  /** What a fetched pack may inflate to (KS_GIT_PACK_TOO_LARGE past it). Default PACK_INFLATION_LIMITS. */
  limits?: PackInflationLimits;
  /** A deepening, for the ancestry check alone: blobs past the limits are left out instead (history-pack.ts). */
  history?: boolean;
}

/**
 * `http`, asking for thin packs where the server offers them and completing each against `readBase`, and refusing a
 * pack that inflates past the limits (KS_GIT_PACK_TOO_LARGE).
 */
export function thinPackHttp(http: HttpClient, readBase: ReadBase, opts: ThinPackHttpOptions = {}): HttpClient {
  const limits = opts.limits ?? PACK_INFLATION_LIMITS;
  const history = opts.history === true;
  let offered: string[] = [];
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const method = req.method ?? 'GET';
      if (method === 'GET' && /\/info\/refs\?service=git-upload-pack$/.test(req.url)) {
        const res = await http.request(req);
        if (res.statusCode !== 200 || !res.body) return res;
        const body = await collect(res.body);
        offered = requestable(body);
        return { ...res, body: once(body) };
      }
      if (method !== 'POST' || !/\/git-upload-pack$/.test(req.url)) return http.request(req);
      const asked =
        offered.length > 0 && Array.isArray(req.body)
          ? withCapabilities(Buffer.concat(req.body as Uint8Array[]), offered)
          : undefined;
      // isomorphic-git sends its request as an array of buffers (its types say an iterator): kept that way.
      const res = await http.request(asked ? { ...req, body: [asked] as unknown as GitHttpRequest['body'] } : req);
      if (res.statusCode !== 200 || !res.body) return res;
      return { ...res, body: completed(res.body, readBase, limits, history) };
    },
  };
}

/**
 * The bases of a thin pack, read from the repository `gitdir` it is fetched into. Every pack there resolves its deltas
 * within itself (full packs, or thin ones completed here), so these reads never follow a delta into another pack.
 */
export function storeBases(gitdir: string): ReadBase {
  return async (oid) => {
    try {
      const { type, object } = await git.readObject({ fs, gitdir, oid, format: 'content' });
      if (type !== 'commit' && type !== 'tree' && type !== 'blob' && type !== 'tag') return undefined;
      return { type, object: object as Uint8Array };
    } catch (e) {
      if ((e as { code?: string }).code === 'NotFoundError') return undefined;
      throw e;
    }
  };
}

/**
 * What to add to an upload-pack request, from a protocol v1 advertisement's capabilities (after the NUL of its first
 * ref line): thin-pack, and no-progress where offered, when the server offers thin-pack and a side band; else nothing.
 */
export function requestable(advertisement: Uint8Array): string[] {
  const text = Buffer.from(advertisement).toString('latin1');
  const nul = text.indexOf('\0');
  if (nul < 0) return [];
  const caps = text.slice(nul + 1, text.indexOf('\n', nul) >>> 0).split(' ');
  if (!caps.includes('thin-pack') || !(caps.includes('side-band-64k') || caps.includes('side-band'))) return [];
  return caps.includes('no-progress') ? ['thin-pack', 'no-progress'] : ['thin-pack'];
}

/** The request with `caps` after the first want's id, or undefined when it has no such line or asks for them already. */
export function withCapabilities(body: Buffer, caps: string[]): Buffer | undefined {
  if (body.length < 4) return undefined;
  const len = parseInt(body.toString('latin1', 0, 4), 16);
  if (!(len > 4) || len > body.length) return undefined;
  const line = body.toString('latin1', 4, len);
  const m = /^want [0-9a-f]{40}/.exec(line);
  if (!m) return undefined;
  const asked = new Set(line.slice(m[0].length).trim().split(' '));
  const added = caps.filter((c) => !asked.has(c));
  if (added.length === 0) return undefined;
  const next = `${m[0]} ${added.join(' ')}${line.slice(m[0].length)}`;
  return Buffer.concat([
    Buffer.from((next.length + 4).toString(16).padStart(4, '0') + next, 'latin1'),
    body.subarray(len),
  ]);
}

/**
 * The upload-pack response with its pack bounded and completed. Everything up to the first side-band line passes as it
 * came; band 3 (a fatal message from the server) passes too, for the library to report. A pack sent without a side
 * band (a server offering none) follows the lines before it raw: it is bounded and passed on as it came. Nothing is
 * handed on before the pack has passed: a refused fetch leaves the repository as it was (the library records the
 * `shallow` lines before the pack as soon as it reads them).
 */
async function* completed(
  source: AsyncIterableIterator<Uint8Array>,
  readBase: ReadBase,
  limits: PackInflationLimits,
  history: boolean,
): AsyncIterableIterator<Uint8Array> {
  const raw = await collect(source);
  const packParts: Buffer[] = [];
  const errors: Buffer[] = [];
  let head = raw.length;
  let pos = 0;
  let inBand = false;
  while (pos < raw.length) {
    if (!inBand && raw.toString('latin1', pos, pos + 4) === 'PACK') {
      const pack = await bounded(checkedPack(raw.subarray(pos)), readBase, limits, history);
      yield Buffer.concat([raw.subarray(0, pos), pack]);
      return;
    }
    const len = pos + 4 <= raw.length ? parseInt(raw.toString('latin1', pos, pos + 4), 16) : NaN;
    if (Number.isNaN(len) || (len > 0 && len < 4) || pos + Math.max(len, 4) > raw.length)
      throw new OperationError('KS_GIT_THIN_PACK', `the fetch response is not pkt-line framed at byte ${pos}`);
    if (len === 0) {
      pos += 4;
      if (inBand) break;
      continue;
    }
    const band = raw[pos + 4]!;
    if (!inBand && band >= 1 && band <= 3) {
      inBand = true;
      head = pos;
    }
    if (inBand) {
      if (band === 1) packParts.push(raw.subarray(pos + 5, pos + len));
      else if (band === 3) errors.push(raw.subarray(pos, pos + len));
      else if (band !== 2) throw new OperationError('KS_GIT_THIN_PACK', `the fetch response has side band ${band}`);
    }
    pos += len;
  }
  const pack =
    packParts.length > 0 ? await bounded(checkedPack(Buffer.concat(packParts)), readBase, limits, history) : undefined;
  yield raw.subarray(0, head);
  if (!inBand) return;
  for (const e of errors) yield e;
  for (let at = 0; pack && at < pack.length; at += MAX_BAND_DATA) {
    const data = pack.subarray(at, at + MAX_BAND_DATA);
    yield Buffer.concat([Buffer.from((data.length + 5).toString(16).padStart(4, '0') + '\x01', 'latin1'), data]);
  }
  yield FLUSH;
}

/** The pack once it passed its limits (a history's without its blobs past them), completed when it is thin. */
async function bounded(
  whole: Buffer,
  readBase: ReadBase,
  limits: PackInflationLimits,
  history: boolean,
): Promise<Buffer> {
  const { pack, cost } = history
    ? await pruneHistoryPack(whole, limits)
    : { pack: whole, cost: checkPackInflation(whole, limits) };
  // Only a pack naming bases by id can be thin; the rest is stored as it came, without inflating it a second time.
  if (cost.refDeltas === 0) return pack;
  return Buffer.from(
    await completeThinPack(pack, readBase, { maxBaseBytes: limits.maxInflatedBytes - cost.inflatedBytes }),
  );
}

/**
 * The pack, if its trailing SHA-1 is that of its content; else KS_GIT_PACK_CORRUPT. Completing a thin pack writes a
 * new trailer, so a pack damaged on the way (a truncated or corrupted transfer) must be caught before that, as
 * `git index-pack` does; and a pack stored with a bad trailer made every later read of it fail (isomorphic-git checks
 * it on first read), so the damage is refused here rather than found in the cache. Shorter than a header and a trailer,
 * it is left to completeThinPack to refuse.
 */
export function checkedPack(pack: Buffer): Buffer {
  if (pack.length < 12 + 20) return pack;
  const want = pack.subarray(pack.length - 20);
  const got = createHash('sha1')
    .update(pack.subarray(0, pack.length - 20))
    .digest();
  if (!got.equals(want))
    throw new OperationError(
      'KS_GIT_PACK_CORRUPT',
      `the fetched pack (${pack.length} bytes) does not match its SHA-1 checksum: truncated or corrupted on the way`,
    );
  return pack;
}

async function collect(source: AsyncIterableIterator<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of source) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function* once(body: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield body;
}
