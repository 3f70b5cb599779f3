// Reading what the fleet view needs from a repository: the commit, its fleet.toml, and every device's reports (the
// repository and the commit opened, a remote fetched, by fleet-repository.ts).
//
// A device's newest report is its notes ref's tip: the reporter writes the message `keystone/<device>: <state>
// <commit>` (git-notes-reporter.ts); when a tip's message says otherwise (a hand-made commit), the newest line of the
// device anywhere in the tip's tree stands in. The shared refs/notes/keystone gives the lines it holds on the commit
// viewed, for devices whose own ref has none (an upgrade loses nothing); it has no per-device tip to tell a newest
// report by, so a device known only from it and silent on this commit does not show.
import * as fs from 'node:fs';
import git, { Errors } from 'isomorphic-git';
import { FLEET_FILE } from '../core/fleet.js';
import { searchAncestor } from '../git/git-ancestry.js';
import { statusContext } from '../report/commit-status.js';
import { DEVICE_NOTES_PREFIX, deviceOfNotesRef, LEGACY_NOTES_REF } from '../report/device-notes-ref.js';
import type { Ancestry, DeviceReport, DeviceReports } from './fleet-view-input.js';
import { CERTIFICATE_ENTRY } from '../report/note-commit.js';
import { noteAt, resolveRefIfAny } from '../report/notes-tree.js';
import { isCommitId } from '../git/commit-id.js';
import { parseStatusNote, type StatusLine } from '../report/status-note.js';

export { UnknownRefError } from './unknown-ref-error.js';

export interface FleetReports {
  /** The committer time of the commit, ms. */
  commitTime: number;
  /** fleet.toml at the commit, or undefined when it has none. */
  fleetText?: string;
  reports: DeviceReports[];
  ancestry: Record<string, Ancestry>;
}

/**
 * The commit, its fleet file and the history come from `gitdir`; the notes from `notesGitdir`, which is the same
 * repository unless the fleet reports to a repository of its own (`keystone agent --status-repo`).
 */
export async function readFleetReports(gitdir: string, commit: string, notesGitdir = gitdir): Promise<FleetReports> {
  const cache = {};
  const { commit: c } = await git.readCommit({ fs, gitdir, oid: commit, cache });
  const fleetText = await readFleetFile(gitdir, commit);
  const reports: DeviceReports[] = [];
  const refs = (await git.listRefs({ fs, gitdir: notesGitdir, filepath: DEVICE_NOTES_PREFIX.replace(/\/$/, '') }))
    .map((r) => `${DEVICE_NOTES_PREFIX}${r}`)
    .sort();
  for (const ref of refs) {
    const device = deviceOfNotesRef(ref);
    const tip = await resolveRefIfAny(notesGitdir, ref);
    if (device === undefined || tip === undefined) continue;
    const context = statusContext(device);
    const onCommit = lineOf(await noteAt(notesGitdir, tip, commit), context, commit);
    const newest =
      (await newestFromMessage(notesGitdir, tip, context)) ?? (await newestInTree(notesGitdir, tip, context));
    reports.push({
      device,
      ...(onCommit && { onCommit }),
      ...(newest && { newest }),
      publishedCertificate: () => publishedCertificate(notesGitdir, tip),
    });
  }
  // Earlier agents' lines on this commit, for devices whose own ref has none.
  const legacyTip = await resolveRefIfAny(notesGitdir, LEGACY_NOTES_REF);
  const legacy = legacyTip === undefined ? undefined : await noteAt(notesGitdir, legacyTip, commit);
  for (const line of legacy === undefined ? [] : parseStatusNote(legacy)) {
    if (!line.context.startsWith('keystone/')) continue;
    const device = line.context.slice('keystone/'.length);
    const known = reports.find((r) => r.device === device);
    const report = toReport(line, commit);
    if (!known) reports.push({ device, onCommit: report, newest: report });
    else if (!known.onCommit) known.onCommit = report;
  }
  const ancestry: Record<string, Ancestry> = {};
  for (const r of reports) {
    const other = r.newest?.commit;
    if (other === undefined || other === commit || other in ancestry) continue;
    ancestry[other] = await relate(gitdir, commit, other, cache);
  }
  return { commitTime: c.committer.timestamp * 1000, ...(fleetText !== undefined && { fleetText }), reports, ancestry };
}

async function readFleetFile(gitdir: string, commit: string): Promise<string | undefined> {
  try {
    const { blob } = await git.readBlob({ fs, gitdir, oid: commit, filepath: FLEET_FILE });
    return Buffer.from(blob).toString('utf8');
  } catch (e) {
    if (e instanceof Errors.NotFoundError) return undefined;
    throw e;
  }
}

function toReport(line: StatusLine, commit: string): DeviceReport {
  return {
    commit,
    state: line.state,
    at: Date.parse(line.time),
    fields: line.fields,
    description: line.description,
    ...(line.log.length > 0 && { log: line.log }),
    ...(line.signature && { signature: line.signature }),
    signed: line.signed,
  };
}

/** The certificate a device publishes in its notes tree (note-commit.ts), if any and not oversized; read only when asked. */
async function publishedCertificate(gitdir: string, tip: string): Promise<string | undefined> {
  const { tree } = (await git.readCommit({ fs, gitdir, oid: tip })).commit;
  const entry = (await git.readTree({ fs, gitdir, oid: tree })).tree.find(
    (e) => e.path === CERTIFICATE_ENTRY && e.type === 'blob',
  );
  if (!entry) return undefined;
  const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid });
  return blob.length <= 16 * 1024 ? Buffer.from(blob).toString('utf8') : undefined;
}

function lineOf(note: string | undefined, context: string, commit: string): DeviceReport | undefined {
  const line = note === undefined ? undefined : parseStatusNote(note).find((l) => l.context === context);
  return line && toReport(line, commit);
}

/** The report the tip's message names (`keystone/<device>: <state> <commit>`), read from the tip's tree. */
async function newestFromMessage(gitdir: string, tip: string, context: string): Promise<DeviceReport | undefined> {
  const { message } = (await git.readCommit({ fs, gitdir, oid: tip })).commit;
  const m = /^(\S+): \S+ ([0-9a-f]{40})\s*$/.exec(message.split('\n', 1)[0] ?? '');
  if (!m || m[1] !== context) return undefined;
  return lineOf(await noteAt(gitdir, tip, m[2]!), context, m[2]!);
}

/** The device's newest line in every note of the tip's tree (flat or fanned out). */
async function newestInTree(gitdir: string, tip: string, context: string): Promise<DeviceReport | undefined> {
  let best: DeviceReport | undefined;
  const walk = async (tree: string, prefix: string): Promise<void> => {
    for (const e of (await git.readTree({ fs, gitdir, oid: tree })).tree) {
      const name = prefix + e.path;
      if (e.type === 'tree' && /^[0-9a-f]{2,38}$/.test(name)) await walk(e.oid, name);
      else if (e.type === 'blob' && isCommitId(name)) {
        const r = lineOf(
          Buffer.from((await git.readBlob({ fs, gitdir, oid: e.oid })).blob).toString('utf8'),
          context,
          name,
        );
        if (r && (best === undefined || r.at > best.at || Number.isNaN(best.at))) best = r;
      }
    }
  };
  await walk((await git.readCommit({ fs, gitdir, oid: tip })).commit.tree, '');
  return best;
}

/** `older` when `other` is an ancestor of `commit`, `newer` when a descendant; `unknown` where history is cut off. */
async function relate(gitdir: string, commit: string, other: string, cache: object): Promise<Ancestry> {
  const maxCommits = 2000;
  if ((await searchAncestor({ gitdir, tip: commit, ancestor: other, maxCommits, cache })).kind === 'found')
    return 'older';
  if ((await searchAncestor({ gitdir, tip: other, ancestor: commit, maxCommits, cache })).kind === 'found')
    return 'newer';
  return 'unknown';
}
