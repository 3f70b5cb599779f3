// A remote Git repository followed on one branch, and the bare cache repository its commits are fetched into.
// Looks are protocol v2 ls-refs with the branch as prefix: the first one after the discovery (`GET info/refs`, which
// shows the server speaks v2), every later one the ls-refs POST alone (git-ls-refs.ts), one request per poll instead
// of two. Fetches are shallow, for that branch alone, with thin packs completed before they are stored
// (thin-pack-http.ts): a new commit costs what changed, not its whole tree. The cache is kept bounded by re-fetching
// into a fresh directory (a new generation) once it holds too many packs or bytes. A look reads its answer only as
// far as the branch (exact-ref-answer.ts); a fetched pack is bounded in what it inflates before it is kept
// (pack-inflation.ts); and everything written here is the agent's user's alone (private-fs.ts).
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { discoveryHttp } from './discovery-http.js';
import { GitServerBusyError, LS_REFS_DEFAULTS, lsRefsV2 } from './git-ls-refs.js';
import type { RefEntry } from './ls-refs-answer.js';
import type { GitRemoteCacheOptions } from './git-remote-cache-options.js';
import { shortBranchRef } from './git-repo-location.js';
import { fetchInto, readBack } from './fetch-into.js';
import { TRANSFER_CODES, transfer, type TransferTotals } from './git-transfer.js';
import { PRIVATE_FS as fs } from '../state-dir/private-fs.js';

/** Looks after which a server that refused the ls-refs POST alone is asked that way again. */
const DIRECT_RETRY_LOOKS = 100;

// Defined beside lsRefsV2, which raises it too; importers of this module keep finding it here.
export { GitServerBusyError };

export class GitRemoteCache {
  readonly totals: TransferTotals = { requests: 0, bytesSent: 0, bytesReceived: 0 };
  private readonly base: string;
  private readonly trackingRef: string;
  private generation = 0;
  private opened = false;
  /** Set when a fetch into the current generation failed for a reason other than the transfer: start afresh. */
  private suspect = false;
  /**
   * Whether a look may be the ls-refs POST alone: `yes` once a look's discovery showed the server speaks protocol v2;
   * `never` once the POST alone was refused while the discovery then worked (a server or proxy that wants the GET
   * first): such a server costs two requests a look, but it is not asked in vain at every poll. Not for good: a
   * refusal may have been a proxy's passing mood, so the POST alone is tried again after DIRECT_RETRY_LOOKS looks.
   */
  private directLook: 'unknown' | 'yes' | 'never' = 'unknown';
  private looksSinceNever = 0;

  constructor(private readonly opts: GitRemoteCacheOptions) {
    const key = createHash('sha256').update(`${opts.url}\0${opts.branchRef}`).digest('hex').slice(0, 16);
    this.base = join(opts.cacheDir, key);
    this.trackingRef = `refs/remotes/origin/${shortBranchRef(opts.branchRef)}`;
  }

  /** The bare repository revisions are read from now; undefined before the first fetch. */
  get gitdir(): string | undefined {
    return this.generation > 0 ? this.genDir(this.generation) : undefined;
  }

  /**
   * Where the branch points on the remote: one protocol v2 ls-refs exchange, no objects. One request (the POST)
   * once a look has shown the server speaks v2; the discovery and the POST (isomorphic-git) before that, and again
   * whenever the POST alone is refused as unsupported.
   */
  async lookRemote(): Promise<string> {
    let refs: RefEntry[] | undefined;
    if (this.directLook === 'never' && ++this.looksSinceNever >= DIRECT_RETRY_LOOKS) this.directLook = 'unknown';
    const direct = this.directLook === 'yes';
    if (direct) {
      try {
        const what = 'looking up the branch';
        const listed = await transfer(
          this.opts,
          this.totals,
          what,
          (_http, budget) =>
            lsRefsV2({
              url: this.opts.url,
              prefixes: [this.opts.branchRef],
              exact: this.opts.branchRef,
              headers: this.opts.headers,
              budget,
              what,
            }),
          undefined,
          this.listingCap,
        );
        refs = listed.refs;
      } catch (e) {
        if ((e as OperationError).code !== 'KS_GIT_SERVER_UNSUPPORTED') throw e;
      }
    }
    if (!refs) {
      let v2 = false;
      refs = await transfer(this.opts, this.totals, 'looking up the branch', (http, budget) =>
        git.listServerRefs({
          http: discoveryHttp(http, {
            onPost: () => (v2 = true),
            budget,
            maxBytes: this.listingCap,
            what: `looking up the branch from ${this.opts.url}`,
            exact: this.opts.branchRef,
            url: this.opts.url,
          }),
          url: this.opts.url,
          protocolVersion: 2,
          prefix: this.opts.branchRef,
        }),
      );
      // Only a look that went through decides: a failed one (a repository gone: 404) says nothing about the protocol.
      if (direct) {
        this.directLook = v2 ? 'never' : 'unknown';
        this.looksSinceNever = 0;
      } else if (v2 && this.directLook === 'unknown') this.directLook = 'yes';
    }
    // A v1 advertisement lists every ref, and the prefix also matches `main-old`: only the exact ref counts.
    const ref = refs.find((r) => r.ref === this.opts.branchRef);
    if (!ref)
      throw new OperationError(
        'KS_GIT_REF_NOT_FOUND',
        `${this.opts.url} has no branch ${shortBranchRef(this.opts.branchRef)}`,
      );
    return ref.oid;
  }

  /**
   * The cap on a protocol v2 ls-refs answer: the ref lister's, not a fetch's. A look reads it only as far as the
   * branch (the first line of a sorted listing, whatever shares its prefix) and runs at every poll, so a server
   * sending a flood before it costs 8 MiB a look, not 128.
   */
  private get listingCap(): number {
    return Math.min(this.opts.maxFetchBytes, LS_REFS_DEFAULTS.maxBytes);
  }

  /**
   * The generation that holds `oid`: the current one, else the one before it (kept while its readers may still be
   * reading). After a fresh generation, which holds the tip alone, the commit a device applied last is often only in
   * the previous one; reading it back there is what lets an agent whose first offered revision is refused apply again
   * what it ran (found by the chaos run).
   */
  async locate(oid: string): Promise<string | undefined> {
    if (await this.has(oid)) return this.gitdir;
    if (this.generation <= 1) return undefined;
    const previous = this.genDir(this.generation - 1);
    try {
      await git.readCommit({ fs, gitdir: previous, oid });
      return previous;
    } catch {
      return undefined;
    }
  }

  /** True when the commit (and so its tree) is already in the current generation. */
  async has(oid: string, cache?: object): Promise<boolean> {
    await this.open();
    const gitdir = this.gitdir;
    if (!gitdir || this.suspect) return false;
    try {
      await git.readCommit({ fs, gitdir, oid, cache });
      return true;
    } catch (e) {
      // Absent is the ordinary answer; anything else (a pack that fails its checksum) is a cache that cannot be read.
      if ((e as { code?: string }).code !== 'NotFoundError') this.suspect = true;
      return false;
    }
  }

  /**
   * The current generation cannot be read (a look failed reading it): the next fetch goes to a fresh one. Without
   * this a damaged pack stayed in use for good, every look failing on it, since nothing is fetched for a tip at hand.
   */
  distrust(): void {
    this.suspect = true;
  }

  /**
   * Fetches the branch tip at depth 1 and returns its commit id (which may be newer than the one ls-refs saw). Goes
   * to a fresh generation when the cache is over its bounds; the previous generation is kept (a reader handed out
   * may still be reading it) and the one before it removed.
   */
  async fetchTip(): Promise<string> {
    await this.open();
    if (this.generation === 0 || this.suspect || (await this.overBounds())) return this.fetchFresh();
    const gitdir = this.gitdir!;
    try {
      return await readBack(
        this.opts,
        gitdir,
        await fetchInto(this.opts, this.totals, this.trackingRef, gitdir, { depth: 1 }),
      );
    } catch (e) {
      if (!TRANSFER_CODES.has((e as OperationError).code)) this.suspect = true;
      throw e;
    }
  }

  /** Brings `by` more generations of history behind the current shallow boundary (deepen-relative). */
  async deepen(by: number): Promise<void> {
    const gitdir = this.gitdir;
    if (!gitdir) throw new OperationError('KS_GIT_FETCH_FAILED', 'nothing fetched yet to deepen');
    await fetchInto(this.opts, this.totals, this.trackingRef, gitdir, { depth: by, relative: true });
  }

  /** Packs and bytes in the current generation (for the bounds, and for tests). */
  async usage(): Promise<{ packs: number; bytes: number }> {
    const gitdir = this.gitdir;
    if (!gitdir) return { packs: 0, bytes: 0 };
    let packs = 0;
    let bytes = 0;
    const packDir = join(gitdir, 'objects', 'pack');
    for (const name of await readdir(packDir).catch(() => [] as string[])) {
      if (name.endsWith('.pack')) packs++;
      bytes += (await stat(join(packDir, name)).catch(() => ({ size: 0 }))).size;
    }
    return { packs, bytes };
  }

  private genDir(n: number): string {
    return join(this.base, `gen-${n}`);
  }

  /**
   * Adopts the newest complete generation left by an earlier run and keeps the one before it (it may hold the commit
   * the device applied last: see locate); half-built and older ones go.
   */
  private async open(): Promise<void> {
    if (this.opened) return;
    // The agent's user's alone, like everything written in it (private-fs.ts): it holds every plan's configuration.
    await mkdir(this.base, { recursive: true, mode: 0o700 });
    await chmod(this.opts.cacheDir, 0o700);
    const names = await readdir(this.base);
    const gens = names
      .map((n) => /^gen-(\d+)$/.exec(n))
      .filter((m) => m !== null)
      .map((m) => Number(m[1]));
    this.generation = gens.length ? Math.max(...gens) : 0;
    for (const n of names)
      if (n !== `gen-${this.generation}` && n !== `gen-${this.generation - 1}`)
        await rm(join(this.base, n), { recursive: true, force: true });
    this.opened = true;
  }

  private async overBounds(): Promise<boolean> {
    const u = await this.usage();
    return u.packs >= this.opts.maxPacks || u.bytes >= this.opts.maxCacheBytes;
  }

  private async fetchFresh(): Promise<string> {
    const next = this.generation + 1;
    // Built under a temporary name and renamed when complete, so a crash never leaves a half-fetched generation in use.
    const tmp = `${this.genDir(next)}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    await git.init({ fs, gitdir: tmp, bare: true, defaultBranch: shortBranchRef(this.opts.branchRef) });
    await git.setConfig({ fs, gitdir: tmp, path: 'remote.origin.url', value: this.opts.url });
    // Just this branch: fetching into a repository without a refspec fails (NoRefspecError), and a wider one would take more.
    await git.setConfig({
      fs,
      gitdir: tmp,
      path: 'remote.origin.fetch',
      value: `+${this.opts.branchRef}:${this.trackingRef}`,
    });
    let oid: string;
    try {
      oid = await readBack(
        this.opts,
        tmp,
        await fetchInto(this.opts, this.totals, this.trackingRef, tmp, { depth: 1 }),
      );
    } catch (e) {
      await rm(tmp, { recursive: true, force: true });
      throw e;
    }
    await rename(tmp, this.genDir(next));
    const previous = this.generation;
    this.generation = next;
    this.suspect = false;
    // Keep `previous`: the revision offered from it may still be loading. Anything older has been superseded twice.
    for (const name of await readdir(this.base)) {
      const m = /^gen-(\d+)$/.exec(name);
      if (m && Number(m[1]) < previous) await rm(join(this.base, name), { recursive: true, force: true });
    }
    return oid;
  }
}
