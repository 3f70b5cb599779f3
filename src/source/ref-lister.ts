// Reads a few groups of refs (given by prefix) of a repository, cheaply enough to do at every poll: a staged rollout's
// device reads the waves before its own this way. A remote is asked with one protocol v2 ls-refs POST
// (git-ls-refs.ts); a local repository is read from its files, loose refs and packed-refs, without Git (ref-files.ts).
import fs from 'node:fs';
import { join } from 'node:path';
import git, { type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { budgetedHttpClient, TransferBudget } from '../git/git-http-client.js';
import {
  checkPrefixes,
  httpDate,
  LS_REFS_DEFAULTS,
  lsRefsV2,
  statusError,
  transportError,
} from '../git/git-ls-refs.js';
import { isValidRefName, type RefEntry } from '../git/ls-refs-answer.js';
import { parseGitRepo } from '../git/git-repo-location.js';
import { keptAdvertisement } from '../git/kept-refs-answer.js';
import { commonGitDir, looseDirOf, readLooseRefs, readPackedRefs, resolveRef } from './ref-files.js';

export type { RefEntry };

export interface RefListing {
  /** Every ref whose name starts with one of the prefixes, with the object it points at (tags not peeled). */
  refs: RefEntry[];
  /** The repository's clock when it answered (ms since the epoch): the host's HTTP Date, or now() for a local one. */
  serverTime?: number;
  /** Requests made to the host (0 for a local repository). */
  requests: number;
  /** Bytes sent and received over them. */
  bytes: number;
}

export interface ListOptions {
  /**
   * Only refs this keeps are wanted (a rollout gate: those that parse as rollout refs). The others are dropped as
   * they stream, never held; the kept ones are capped at the lister's maxBytes, and the wire at
   * FILTERED_LISTING_WIRE_BYTES, so that no number of refs the caller would drop stops the listing below that.
   */
  keep?: (ref: string) => boolean;
}

export interface RefLister {
  /** The refs under `prefixes` (none: an empty listing, nothing asked). Throws OperationError with a KS_* code. */
  list(prefixes: string[], opts?: ListOptions): Promise<RefListing>;
}

export interface RefListerOptions {
  /** For an http(s) repository: sent as `x-access-token` Basic credentials, like the Git source's. */
  token?: string;
  /** The clock a local repository's serverTime is read from (default Date.now). */
  now?: () => number;
  /** Bounds on one list() against a remote, every request of it together. */
  timeoutMs?: number;
  maxBytes?: number;
}

/**
 * The wire cap of a listing filtered by `keep`, eight times the default. Refs that are dropped cost this device
 * download bytes and parsing time, not memory (each is let go as it arrives), so the cap on what is kept, the memory
 * bound, stays at 8 MiB, and the wire's is set where a pusher's junk stops a read only past ~600,000 refs in the very
 * subtree read, instead of ~80,000. It stays a cap: anyone with push rights can always cost a device bandwidth (by
 * refs, or by objects it must fetch), and a metered link should not pay for an unbounded answer at every poll.
 */
export const FILTERED_LISTING_WIRE_BYTES = 64 * 1024 * 1024;

/**
 * A lister for `repository`: an http(s) URL, or a local repository (bare, or a work tree with `.git`). Throws
 * KS_GIT_BAD_URL / KS_GIT_CREDENTIALS_IN_URL for a URL that cannot be used, KS_USAGE for an unusable token.
 */
export function refListerFor(repository: string, opts: RefListerOptions = {}): RefLister {
  const location = parseGitRepo(repository);
  if (location.kind === 'local') return new LocalRefLister(location.path, opts.now ?? Date.now);
  const token = opts.token;
  if (
    token !== undefined &&
    (token === '' || [...token].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f))
  )
    throw new OperationError('KS_USAGE', 'the Git token is empty or contains whitespace or control characters');
  const headers: Record<string, string> = token
    ? { authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}` }
    : {};
  return new HttpRefLister(
    location.url,
    headers,
    opts.maxBytes ?? LS_REFS_DEFAULTS.maxBytes,
    opts.timeoutMs ?? LS_REFS_DEFAULTS.timeoutMs,
  );
}

/**
 * How a remote is read, learnt on the first listing that goes through and kept: `post`, the ls-refs POST alone (one
 * request); `discover`, the discovery GET and then the POST (a server that speaks v2 but refuses the POST alone);
 * `v1`, the discovery GET alone, whose protocol v1 advertisement lists every ref (a server without v2).
 */
type HttpMode = 'unknown' | 'post' | 'discover' | 'v1';

class HttpRefLister implements RefLister {
  private mode: HttpMode = 'unknown';

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly maxBytes: number,
    private readonly timeoutMs: number,
  ) {}

  async list(prefixes: string[], opts: ListOptions = {}): Promise<RefListing> {
    if (prefixes.length === 0) return { refs: [], requests: 0, bytes: 0 };
    checkPrefixes(prefixes);
    const wire = opts.keep ? Math.max(this.maxBytes, FILTERED_LISTING_WIRE_BYTES) : this.maxBytes;
    const budget = new TransferBudget(wire, this.timeoutMs, `listing refs of ${this.url}`);
    const { refs, serverTime } = await budget.run(() => this.listWithin(budget, prefixes, opts.keep));
    return {
      refs,
      ...(serverTime !== undefined && { serverTime }),
      requests: budget.requests,
      bytes: budget.sent + budget.received,
    };
  }

  private async listWithin(
    budget: TransferBudget,
    prefixes: string[],
    keep?: (ref: string) => boolean,
  ): Promise<{ refs: RefEntry[]; serverTime?: number }> {
    const filter = keep && { keep, maxKeptBytes: this.maxBytes };
    const post = () => lsRefsV2({ url: this.url, prefixes, headers: this.headers, budget, ...filter });
    if (this.mode === 'post') return post();
    if (this.mode === 'unknown') {
      try {
        const r = await post();
        this.mode = 'post';
        return r;
      } catch (e) {
        // Only "not understood" is worth a second request; auth, busy, unreachable would fail the discovery too.
        if ((e as OperationError).code !== 'KS_GIT_SERVER_UNSUPPORTED') throw e;
      }
    }
    const found = await this.discover(budget, keep);
    if (found.info.protocolVersion === 2) {
      if (!found.info.capabilities['ls-refs'])
        throw new OperationError('KS_GIT_SERVER_UNSUPPORTED', `${this.url} speaks protocol v2 without ls-refs`);
      const r = await post();
      this.mode = 'discover';
      return r;
    }
    const refs = v1Refs(found.info.refs ?? [], prefixes, this.url).filter((r) => !keep || keep(r.ref));
    this.mode = 'v1';
    return { refs, ...(found.serverTime !== undefined && { serverTime: found.serverTime }) };
  }

  /**
   * `GET info/refs?service=git-upload-pack` asking for v2: the capabilities, or (v1) every ref of the repository,
   * which with `keep` is filtered as it streams, like an ls-refs answer (kept-refs-answer.ts).
   */
  private async discover(
    budget: TransferBudget,
    keep?: (ref: string) => boolean,
  ): Promise<{ info: Awaited<ReturnType<typeof git.getRemoteInfo2>>; serverTime?: number }> {
    let last: GitHttpResponse | undefined;
    const what = `listing refs of ${this.url}`;
    const http: HttpClient = {
      request: async (req) => {
        last = await budgetedHttpClient(budget, this.headers).request(req);
        if (keep && last.statusCode === 200 && last.body)
          last.body = keptAdvertisement(last.body, { keep, maxKeptBytes: this.maxBytes, url: this.url, what });
        return last;
      },
    };
    try {
      const info = await git.getRemoteInfo2({ http, url: this.url, protocolVersion: 2 });
      const serverTime = httpDate(last?.headers?.['date']);
      return { info, ...(serverTime !== undefined && { serverTime }) };
    } catch (e) {
      if (budget.failure) throw budget.failure;
      const err = e as Error & { code?: string; data?: { statusCode?: number } };
      if (err.code === 'HttpError') {
        const status = err.data?.statusCode ?? 0;
        // A 4xx to the discovery is not "unsupported" any more: it is the host's last word (404: no such repository).
        if (status === 404)
          throw new OperationError('KS_GIT_REPO_NOT_FOUND', `${this.url} answered HTTP 404: no such repository`);
        const retryAfter = budget.busy?.status === status ? budget.busy.retryAfter : undefined;
        throw statusError(status, retryAfter, {
          url: this.url,
          what: 'listing refs',
          authorized: 'authorization' in this.headers,
        });
      }
      if (err.code === 'SmartHttpError' || err.code === 'ParseError' || err.code === 'EmptyServerResponseError')
        throw new OperationError(
          'KS_GIT_SERVER_UNSUPPORTED',
          `${this.url} is not a Git smart-HTTP server (its ref advertisement cannot be read)`,
        );
      throw transportError(e, this.url, 'listing refs');
    }
  }
}

/** The refs of a v1 advertisement under `prefixes`, checked like an ls-refs answer's. */
function v1Refs(all: { ref: string; oid: string }[], prefixes: string[], url: string): RefEntry[] {
  const refs: RefEntry[] = [];
  for (const { ref, oid } of all) {
    if (!prefixes.some((p) => ref.startsWith(p))) continue;
    if (!/^[0-9a-f]{40}$/.test(oid) || !isValidRefName(ref))
      throw new OperationError(
        'KS_GIT_SERVER_UNSUPPORTED',
        `${url} advertised a ref that is not one (a bad name or object id)`,
      );
    refs.push({ ref, oid });
  }
  return refs;
}

/**
 * A local repository's refs, read from its files the way Git's files backend keeps them: loose refs (one file each
 * under refs/) and packed-refs, a loose ref winning over a packed one of the same name. Loose refs are read first and
 * packed-refs after: `git pack-refs` writes packed-refs before it removes the loose files, so a ref being packed
 * meanwhile is found in one or the other.
 */
class LocalRefLister implements RefLister {
  constructor(
    private readonly path: string,
    private readonly now: () => number,
  ) {}

  async list(prefixes: string[], opts: ListOptions = {}): Promise<RefListing> {
    if (prefixes.length === 0) return { refs: [], serverTime: this.now(), requests: 0, bytes: 0 };
    checkPrefixes(prefixes);
    const common = commonGitDir(this.path);
    if (fs.existsSync(join(common, 'reftable')))
      throw new OperationError(
        'KS_GIT_READ_FAILED',
        `${this.path} keeps its refs in a reftable, which cannot be read here`,
      );
    const loose = new Map<string, string>();
    for (const dir of new Set(prefixes.map(looseDirOf))) await readLooseRefs(common, dir, loose);
    const packed = await readPackedRefs(common);
    const refs: RefEntry[] = [];
    const names = new Set([...loose.keys(), ...packed.keys()]);
    for (const ref of [...names].sort()) {
      if (!prefixes.some((p) => ref.startsWith(p)) || !isValidRefName(ref) || (opts.keep && !opts.keep(ref))) continue;
      const oid = await resolveRef(ref, loose, packed, common);
      if (oid) refs.push({ ref, oid });
    }
    return { refs, serverTime: this.now(), requests: 0, bytes: 0 };
  }
}
