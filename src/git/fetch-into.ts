// The fetch of the branch into one generation of the remote cache (fetchInto) and the check that its tip reads
// back (readBack): module functions of GitRemoteCache, apart so that the class file holds the generations' bookkeeping.
import git from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import type { GitRemoteCacheOptions } from './git-remote-cache-options.js';
import { shortBranchRef } from './git-repo-location.js';
import { transfer, type TransferTotals } from './git-transfer.js';
import { PACK_INFLATION_LIMITS } from './pack-inflation.js';
import { PRIVATE_FS as fs } from '../state-dir/private-fs.js';
import { storeBases, thinPackHttp } from './thin-pack-http.js';

/**
 * `oid` once it reads back from `gitdir`: isomorphic-git stores a fetched pack without checking its checksum and
 * checks it at the first read, so a pack damaged on the way would otherwise be found only by the revision's reader,
 * after the commit had been offered (and then never looked at again). A fetch is done when its tip reads.
 */
export async function readBack(opts: GitRemoteCacheOptions, gitdir: string, oid: string): Promise<string> {
  try {
    await git.readCommit({ fs, gitdir, oid });
    return oid;
  } catch (e) {
    const why = (e as Error).message.split('\n').at(-1)!.slice(0, 200);
    const message = `the commit ${oid.slice(0, 12)} fetched from ${opts.url} does not read back (${why}); the next fetch starts a fresh cache`;
    throw new OperationError('KS_GIT_PACK_CORRUPT', opts.redact(message));
  }
}

export async function fetchInto(
  opts: GitRemoteCacheOptions,
  totals: TransferTotals,
  trackingRef: string,
  gitdir: string,
  depth: { depth: number; relative?: boolean },
): Promise<string> {
  const res = await transfer(
    opts,
    totals,
    'fetching',
    (http) =>
      git.fetch({
        fs,
        // A deepening is for the ancestry check alone: its blobs past the limits are left out rather than refused.
        http: thinPackHttp(http, storeBases(gitdir), {
          limits: opts.inflation ?? PACK_INFLATION_LIMITS,
          history: depth.relative === true,
        }),
        gitdir,
        url: opts.url,
        remote: 'origin',
        // The local tracking ref doubles as the "have" the server starts from.
        ref: trackingRef,
        remoteRef: opts.branchRef,
        singleBranch: true,
        tags: false,
        ...depth,
      }),
    opts.branchRef,
  );
  if (!res.fetchHead)
    throw new OperationError('KS_GIT_REF_NOT_FOUND', `${opts.url} has no branch ${shortBranchRef(opts.branchRef)}`);
  return res.fetchHead;
}
