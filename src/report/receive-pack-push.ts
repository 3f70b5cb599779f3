// A push of several refs in one request, without the ref advertisement (docs/fleet-scale.md).
//
// A Git push normally starts with `GET info/refs?service=git-receive-pack`, which lists every ref of the repository:
// on a reports repository that is every device's refs, ~81 B each, before the push sends a byte of its own. A device
// that alone writes its refs already knows their values on the server (it set them), so it can skip that: smart HTTP
// runs receive-pack stateless, and a `POST git-receive-pack` carrying the commands and the pack is a whole push. Each
// command names the value the ref must have on the server (`old`): the server updates the ref only if it does, so a
// wrong guess costs a refusal of that ref ("stale"), never a lost update; the caller then learns the server's values
// (receivePackRefs, the advertisement, in that fallback only) and pushes again.
//
// The pack holds what the new tips need that the server lacks: the objects reachable from them and not from any
// `old` of the push (all on the server when every `old` is right; when one is not, that ref is refused). For a notes
// commit built on our previous tip that is the commit, its changed trees and the new blob.
import * as fs from 'node:fs';
import git, { Errors } from 'isomorphic-git';
import { StatusDeliveryError } from './commit-status.js';
import { FLUSH, pktLine, pktLines } from './pkt-lines.js';
import { expectType, send, trimSlash, type ReceivePackOptions } from './receive-pack-http.js';
import { redactUrl } from '../git/git-repo-location.js';

/** The all-zero object id: as `old`, the ref must not exist yet; as `new`, delete the ref. */
export const ZERO_OID = '0'.repeat(40);

export interface RefUpdate {
  ref: string;
  /** The value the ref has on the server (40 hex), or ZERO_OID when it must not exist yet. */
  old: string;
  /** The value to set (40 hex), or ZERO_OID to delete the ref. */
  new: string;
}

/**
 * How the server took one update. `stale`: refused because the ref on the server was not at `old` (or cannot be told
 * apart from that: "failed to update ref", "failed to lock", "stale info", objects missing because `old` was wrong);
 * learn the server's value and push again. `rejected`: refused for another reason (a hook, a forbidden deletion, a
 * ref name the server will not take), which pushing again will not change.
 */
export type RefUpdateResult =
  { ref: string; status: 'ok' } | { ref: string; status: 'stale' | 'rejected'; reason: string };

export interface PushRefsOptions extends ReceivePackOptions {
  /** The local repository holding every object the new values need. */
  gitdir: string;
  updates: readonly RefUpdate[];
}

const OID = /^[0-9a-f]{40}$/;
const CAPABILITIES = 'report-status delete-refs ofs-delta agent=keystone';
/** A report-status answer is a few lines per ref; anything far larger is not one. */
const MAX_REPORT_BYTES = 1 << 20;
const STALE_REASON =
  /\bstale\b|\block\b|failed to (update|delete)|missing necessary objects|fetch first|non-fast-forward|already exists/i;

/**
 * Applies `updates` on the server in one `POST <url>/git-receive-pack` and says, per ref and in the order given, how
 * it went. Throws StatusDeliveryError: coded by HTTP status (httpDeliveryError; a server with receive-pack off says
 * 403), KS_STATUS_UNREACHABLE when the server cannot be reached, KS_STATUS_SERVER_ERROR when it could not unpack or
 * its answer is not a report, KS_STATUS_INVALID for updates that are no push, KS_STATUS_GIT_FAILED when the local
 * objects cannot be read.
 */
export async function pushRefs(opts: PushRefsOptions): Promise<RefUpdateResult[]> {
  const what = `push to ${redactUrl(opts.url)}`;
  checkUpdates(opts.updates);
  if (opts.updates.length === 0) return [];
  const commands = opts.updates.map((u, i) =>
    pktLine(i === 0 ? `${u.old} ${u.new} ${u.ref}\0${CAPABILITIES}` : `${u.old} ${u.new} ${u.ref}`),
  );
  // Git reads no pack when every command is a deletion, and needs one (even empty) otherwise.
  const onlyDeletes = opts.updates.every((u) => u.new === ZERO_OID);
  const pack = onlyDeletes ? [] : [await packFor(opts.gitdir, opts.updates, what)];
  const body = Buffer.concat([...commands, FLUSH, ...pack]);
  const res = await send(
    opts,
    `${trimSlash(opts.url)}/git-receive-pack`,
    'POST',
    { 'content-type': 'application/x-git-receive-pack-request', accept: 'application/x-git-receive-pack-result' },
    body,
    what,
  );
  expectType(res, 'application/x-git-receive-pack-result', what);
  const lines: string[] = [];
  let size = 0;
  for await (const pkt of pktLines(res, what, opts.signal)) {
    if (pkt === null) break;
    size += pkt.length;
    if (size > MAX_REPORT_BYTES)
      throw new StatusDeliveryError(
        'KS_STATUS_SERVER_ERROR',
        `${what}: the report-status answer is over ${MAX_REPORT_BYTES} bytes`,
      );
    lines.push(pkt.toString('utf8').replace(/\n$/, ''));
  }
  res.resume();
  return readReport(lines, opts.updates, what);
}

/**
 * The server's refs as its receive-pack advertisement lists them (`GET <url>/info/refs?service=git-receive-pack`),
 * those `wanted` accepts. Every ref of the repository comes over the wire, so this is for a fallback only. Throws
 * StatusDeliveryError like pushRefs.
 */
export async function receivePackRefs(
  opts: ReceivePackOptions & { wanted?: (ref: string) => boolean },
): Promise<Map<string, string>> {
  const what = `ref advertisement of ${redactUrl(opts.url)}`;
  const res = await send(opts, `${trimSlash(opts.url)}/info/refs?service=git-receive-pack`, 'GET', {}, undefined, what);
  expectType(res, 'application/x-git-receive-pack-advertisement', what);
  const refs = new Map<string, string>();
  let first = true;
  for await (const pkt of pktLines(res, what, opts.signal)) {
    const line = pkt?.toString('utf8').replace(/\n$/, '');
    // Smart HTTP starts with `# service=…` and a flush; the refs follow, up to the next flush.
    if (first && line?.startsWith('# service=')) continue;
    if (first && line === undefined) {
      first = false;
      continue;
    }
    first = false;
    if (line === undefined) break;
    const m = /^([0-9a-f]{40}) ([^\0 ]+)/.exec(line);
    if (!m)
      throw new StatusDeliveryError(
        'KS_STATUS_SERVER_ERROR',
        `${what}: not a ref line: ${JSON.stringify(line.slice(0, 80))}`,
      );
    const [, oid, ref] = m as unknown as [string, string, string];
    if (ref !== 'capabilities^{}' && (opts.wanted?.(ref) ?? true)) refs.set(ref, oid);
  }
  res.resume();
  return refs;
}

// ---- the commands and the report ----

function checkUpdates(updates: readonly RefUpdate[]): void {
  const bad = (why: string) => new StatusDeliveryError('KS_STATUS_INVALID', `push: ${why}`);
  const seen = new Set<string>();
  for (const u of updates) {
    if (!/^refs\/[^\0\s]+$/.test(u.ref)) throw bad(`${JSON.stringify(u.ref)} is not a ref name`);
    if (seen.has(u.ref)) throw bad(`${u.ref} is updated twice`);
    seen.add(u.ref);
    if (!OID.test(u.old) || !OID.test(u.new)) throw bad(`${u.ref}: old and new must be 40 lowercase hex`);
    if (u.old === ZERO_OID && u.new === ZERO_OID) throw bad(`${u.ref}: deleting a ref that must not exist`);
  }
}

/** The report-status lines of a receive-pack answer, per update in order; coded errors for anything else. */
export function readReport(lines: string[], updates: readonly RefUpdate[], what: string): RefUpdateResult[] {
  const [unpack, ...rest] = lines;
  if (unpack === undefined || !unpack.startsWith('unpack '))
    throw new StatusDeliveryError(
      'KS_STATUS_SERVER_ERROR',
      `${what}: the answer is not a report-status (${JSON.stringify((unpack ?? '').slice(0, 80))})`,
    );
  if (unpack !== 'unpack ok')
    throw new StatusDeliveryError(
      'KS_STATUS_SERVER_ERROR',
      `${what}: the server could not unpack the pack: ${unpack.slice('unpack '.length)}`,
    );
  const byRef = new Map<string, RefUpdateResult>();
  for (const line of rest) {
    const ok = /^ok (\S+)$/.exec(line);
    if (ok) {
      byRef.set(ok[1]!, { ref: ok[1]!, status: 'ok' });
      continue;
    }
    const ng = /^ng (\S+)(?: (.*))?$/.exec(line);
    if (ng) {
      const reason = ng[2] ?? 'refused';
      byRef.set(ng[1]!, { ref: ng[1]!, status: STALE_REASON.test(reason) ? 'stale' : 'rejected', reason });
    }
    // Anything else (a later protocol's option lines) says nothing about a ref.
  }
  return updates.map((u) => {
    const r = byRef.get(u.ref);
    if (!r) throw new StatusDeliveryError('KS_STATUS_SERVER_ERROR', `${what}: the server did not report on ${u.ref}`);
    return r;
  });
}

// ---- the pack ----

/** A pack of the objects reachable from the new values and not from any old one. */
async function packFor(gitdir: string, updates: readonly RefUpdate[], what: string): Promise<Buffer> {
  const haves = new Set(updates.map((u) => u.old).filter((o) => o !== ZERO_OID));
  const wants = updates.map((u) => u.new).filter((o) => o !== ZERO_OID);
  try {
    const cache = {};
    const oids = await objectsToSend(gitdir, wants, haves, cache);
    const { packfile } = await git.packObjects({ fs, gitdir, oids, cache });
    return Buffer.from(packfile as Uint8Array);
  } catch (e) {
    const detail =
      e instanceof Errors.NotFoundError
        ? `an object is missing from ${gitdir}`
        : e instanceof Error
          ? e.message
          : String(e);
    throw new StatusDeliveryError('KS_STATUS_GIT_FAILED', `${what}: building the pack: ${detail}`, {}, { cause: e });
  }
}

/**
 * The commits from `wants` back to (not including) any of `haves`, each with its tree's objects that differ from its
 * first parent's tree. The server has every object reachable from a `have`, and each commit's unchanged subtrees are
 * its parent's, so this is all it lacks. A `want` with no `have` among its ancestors (a ref created, or a guess that
 * was wrong) gets its whole history as far as the repository has it: a commit it lists as shallow (a fetch of depth 1,
 * a compacted notes cache) ends the walk. Past one, the server lacks what it needs only when the guess was wrong, and
 * then refuses the ref as it would anyway.
 */
async function objectsToSend(
  gitdir: string,
  wants: readonly string[],
  haves: ReadonlySet<string>,
  cache: object,
): Promise<string[]> {
  const out = new Set<string>();
  const visited = new Set<string>();
  const shallow = await shallowCommits(gitdir);
  const queue = [...wants];
  while (queue.length) {
    const oid = queue.pop() as string;
    if (visited.has(oid) || haves.has(oid)) continue;
    visited.add(oid);
    const { commit } = await git.readCommit({ fs, gitdir, oid, cache });
    out.add(oid);
    if (!shallow.has(oid)) queue.push(...commit.parent);
    const parent = commit.parent[0];
    const parentTree = parent === undefined ? undefined : await treeOfIfAny(gitdir, parent, cache);
    await treeObjects(gitdir, commit.tree, parentTree, out, cache);
  }
  return [...out];
}

/** The commits `<gitdir>/shallow` lists: their parents are not in the repository, on purpose. */
async function shallowCommits(gitdir: string): Promise<Set<string>> {
  const text = await fs.promises.readFile(`${gitdir}/shallow`, 'utf8').catch(() => '');
  return new Set(text.split('\n').filter((l) => OID.test(l)));
}

/** A `have` need not be in the local repository (only its id was learnt): then its tree is not compared against. */
async function treeOfIfAny(gitdir: string, oid: string, cache: object): Promise<string | undefined> {
  try {
    return (await git.readCommit({ fs, gitdir, oid, cache })).commit.tree;
  } catch (e) {
    if (e instanceof Errors.NotFoundError) return undefined;
    throw e;
  }
}

async function treeObjects(
  gitdir: string,
  tree: string,
  base: string | undefined,
  out: Set<string>,
  cache: object,
): Promise<void> {
  if (tree === base || out.has(tree)) return;
  out.add(tree);
  const entries = (await git.readTree({ fs, gitdir, oid: tree, cache })).tree;
  const before = new Map(
    base === undefined
      ? []
      : (await git.readTree({ fs, gitdir, oid: base, cache })).tree.map((e) => [e.path, e] as const),
  );
  for (const e of entries) {
    if (e.type === 'commit') continue; // a submodule's commit lives in another repository
    const old = before.get(e.path);
    if (old?.oid === e.oid) continue;
    if (e.type === 'tree') await treeObjects(gitdir, e.oid, old?.type === 'tree' ? old.oid : undefined, out, cache);
    else out.add(e.oid);
  }
}
