// The notes cache's own refs for a remote: its set-up (initNotesCache), the tracking prefix the server's value of a
// device's notes ref is kept under, and the server's values of the rollout refs (recordRollout). Apart from
// git-notes-reporter.ts, which decides when each is written; plus notReplaced, the error of a tip the server keeps.
import { existsSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { StatusDeliveryError } from './commit-status.js';
import { DEVICE_NOTES_PREFIX } from './device-notes-ref.js';
import { ZERO_OID } from './receive-pack-push.js';
import { makePrivate } from '../state-dir/private-fs.js';

/**
 * The server's value of a device's notes ref as last seen (pushed, fetched or advertised): the `old` of the next push.
 * Kept apart from the ref we build on, which runs ahead of the server while a push fails. fetch() writes it too.
 */
export const TRACKING_PREFIX = 'refs/remotes/origin/keystone-devices/';

/** Creates the bare cache when missing, keeps it private, and sets the refspec fetch() records the remote tip by. */
export async function initNotesCache(gitdir: string): Promise<void> {
  if (!existsSync(join(gitdir, 'HEAD'))) await git.init({ fs, gitdir, bare: true });
  // The agent's alone, also when a damaged cache was just rebuilt (the state directory's check tightens it only at
  // start): a 0700 top directory keeps every other user out of whatever isomorphic-git writes below it.
  makePrivate(gitdir);
  // fetch() records the remote tip through the remote's refspec, and refuses to fetch without one.
  await git.setConfig({
    fs,
    gitdir,
    path: 'remote.origin.fetch',
    value: `+${DEVICE_NOTES_PREFIX}*:${TRACKING_PREFIX}*`,
  });
}

/** Records the server's value of one of our rollout refs in the cache (undefined: it has none); returns the new map. */
export async function recordRollout(
  gitdir: string,
  known: ReadonlyMap<string, string>,
  ref: string,
  oid: string | undefined,
): Promise<Map<string, string>> {
  const next = new Map(known);
  if (oid === undefined || oid === ZERO_OID) {
    next.delete(ref);
    await git.deleteRef({ fs, gitdir, ref });
  } else {
    next.set(ref, oid);
    // Only an id: the object need not be in the cache, since the push uses it as an old value and nothing reads it.
    await git.writeRef({ fs, gitdir, ref, value: oid, force: true });
  }
  return next;
}

/**
 * The server keeps a tip past the limits, and refused to have it replaced (a hook, a rule against force pushes): retryable,
 * since the ref is the fleet operator's to delete, and the device then reports again.
 */
export function notReplaced(why: StatusDeliveryError, ref: string, refused: string[]): StatusDeliveryError {
  return new StatusDeliveryError(
    'KS_STATUS_NOTES_TOO_LARGE',
    `${why.message}; the server refused to replace it (${refused.join(', ')}): delete ${ref} on the server (docs/fleet-reports.md)`,
  );
}
