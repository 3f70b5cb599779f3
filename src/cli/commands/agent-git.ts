// `keystone agent --repo`: the Git source, the commit statuses it reports (outbox → Git notes and/or the GitHub API),
// and the `--on-failure rollback` policy, wired onto a started agent.
import { join } from 'node:path';
import type { Agent } from '../../agent/agent.js';
import { isCommitId, reportCommitStatuses } from '../../agent/commit-reporting.js';
import type { Logger } from '../../log/logger.js';
import { GitSource } from '../../source/git-source.js';
import { statusContext, type StatusReporter } from '../../status/commit-status.js';
import { GitNotesReporter } from '../../status/git-notes-reporter.js';
import { GitHubStatusReporter, ownerRepoFromUrl } from '../../status/github-status-reporter.js';
import { StatusOutbox } from '../../status/status-outbox.js';
import type { StateStore } from '../../store/state-store.js';
import { UsageError } from '../io.js';
import { FLEET_FILE } from '../../core/fleet.js';
import { formatLabels, type Labels } from '../../core/labels.js';
import { deviceIdentity } from '../../agent/device-identity.js';

// Defined beside the command that reads the secrets before it knows the source; `keystonectl fleet` takes it from here.
export { secretFrom } from './agent.js';

export interface GitFollowOptions {
  repo: string;
  ref: string;
  stateDir: string;
  /** Absent when fleet.toml picks the plan. */
  planFile?: string;
  device: string;
  /** The device's labels (`--label`), which fleet.toml's targets select by. */
  labels: Labels;
  pollMs: number;
  token?: string;
  allowHistoryRewrite: boolean;
  onFailure: 'none' | 'rollback';
  /**
   * Where Git notes go, when not to the followed repository (`--status-repo`): a fleet's reports repository keeps
   * every device's notes ref out of the ref advertisement every device reads when it fetches a new commit.
   */
  statusRepo?: string;
  /** Reporter names: `git-notes`, `github`. */
  status: string[];
  github?: { repo?: string; token?: string; apiBase?: string };
  log: Logger;
  random: () => number;
  now: () => number;
}

export interface GitFollowing {
  source: GitSource;
  /** Starts the source; says when the first look is, if it waits for the device's place in the poll interval. */
  start(): Promise<void>;
  outbox: StatusOutbox;
  close(): Promise<void>;
}

/**
 * The last commit applied from Git (success or failure: it ran on the device), which every new commit must descend
 * from; a manual apply or a refused commit in between does not count.
 */
export function lastAppliedCommit(store: Pick<StateStore, 'appliedRevision' | 'history'>): string | undefined {
  const applied = store.appliedRevision()?.id;
  if (applied !== undefined && isCommitId(applied)) return applied;
  return store.history({ limit: 100 }).find((h) => isCommitId(h.revision) && h.outcome !== 'rejected' && h.outcome !== undefined)?.revision;
}

/** The newest commit whose apply succeeded, other than `except`. */
function lastGoodCommit(store: Pick<StateStore, 'history'>, except: string): string | undefined {
  return store.history({ limit: 100 }).find((h) => isCommitId(h.revision) && h.revision !== except && h.outcome === 'success')?.revision;
}

export function followGit(agent: Agent, opts: GitFollowOptions): GitFollowing {
  const log = opts.log.child({ module: 'agent' });
  const reporters: StatusReporter[] = [];
  for (const name of opts.status) {
    if (name === 'git-notes')
      reporters.push(new GitNotesReporter({ repository: opts.statusRepo ?? opts.repo, cacheDir: join(opts.stateDir, 'notes.git'), ...(opts.token !== undefined && { token: opts.token }), now: opts.now }));
    else if (name === 'github') {
      const target = opts.github?.repo ? parseOwnerRepo(opts.github.repo) : ownerRepoFromUrl(opts.repo);
      if (!target) throw new UsageError(`--status github: give --github-repo OWNER/REPO (it cannot be read from ${opts.repo})`);
      const token = opts.github?.token ?? opts.token;
      if (!token) throw new UsageError('--status github needs a token: --github-token-file FILE or KEYSTONE_GITHUB_TOKEN (or the Git token)');
      reporters.push(new GitHubStatusReporter({ ...target, token, ...(opts.github?.apiBase !== undefined && { apiBase: opts.github.apiBase }) }));
    } else if (name !== 'none') throw new UsageError(`--status takes git-notes, github or none, not "${name}"`);
  }
  const outbox = new StatusOutbox({ store: agent.store, reporters, now: opts.now, random: opts.random, log: opts.log.child({ module: 'status' }) });

  const rollbacks = new Set<string>();
  const reporting = reportCommitStatuses({
    events: agent.events,
    outbox,
    context: statusContext(opts.device),
    now: opts.now,
    silent: (id) => rollbacks.has(id),
    rolloutKeep: () => agent.rolloutKeep(),
    onFailure: (failed) => {
      if (opts.onFailure !== 'rollback' || rollbacks.has(failed)) return undefined;
      const good = lastGoodCommit(agent.store, failed);
      if (!good) {
        log.warn({ revision: failed }, 'apply failed and no earlier commit succeeded on this device: nothing to roll back to');
        return '; no earlier good commit to roll back to';
      }
      rollbacks.add(good);
      void source.revisionAt(good).then(
        (rev) => {
          if (!rev) {
            rollbacks.delete(good);
            log.error({ revision: failed, rollback_to: good }, 'cannot roll back: that commit is no longer in the local clone');
            return;
          }
          log.warn({ revision: failed, rollback_to: good }, 'apply failed: rolling back to the last commit that succeeded (--on-failure rollback)');
          agent.offer({ ...rev, rollback: true });
        },
        (e: Error) => log.error({ err: e, rollback_to: good }, 'rolling back failed'),
      );
      return `; rolling back to ${good.slice(0, 7)}`;
    },
  });

  // Other labels, another name or another --plan since the last apply: the plan may have changed, so no waiting.
  const recorded = agent.store.appliedRevision()?.identity;
  const identityChanged = recorded !== undefined && recorded !== deviceIdentity({ device: opts.device, labels: opts.labels }, opts.planFile);
  if (identityChanged) log.info({ device: opts.device, labels: formatLabels(opts.labels), plan: opts.planFile ?? 'from fleet.toml' }, "this device's name, labels or --plan changed since the last apply: looking at the Git source at once");
  let lastSourceError: string | undefined;
  const source = new GitSource({
    repo: opts.repo,
    ref: opts.ref,
    cacheDir: join(opts.stateDir, 'git'),
    ...(opts.token !== undefined && { token: opts.token }),
    pollMs: opts.pollMs,
    random: opts.random,
    now: opts.now,
    // A fleet rebooted together spreads its first looks by device name (SPEC §13).
    device: opts.device,
    lookAtOnce: identityChanged,
    lastAppliedCommit: () => lastAppliedCommit(agent.store),
    allowHistoryRewrite: opts.allowHistoryRewrite,
    onRevision: (r) => {
      // A rollback target that becomes the tip again is an ordinary commit once more.
      rollbacks.delete(r.id);
      agent.offer(r);
    },
    onRejected: ({ commit, code, reason }) => {
      agent.store.recordRejected({ revision: commit, planFile: opts.planFile ?? FLEET_FILE, at: opts.now(), reason: `${code}: ${reason}` });
      log.error({ revision: commit, code, reason }, 'commit refused; still running the previous one');
      reporting.rejected(commit, `${code}: ${reason}`);
    },
    onError: (e) => {
      lastSourceError = `${e.message}${e.code ? ` [${e.code}]` : ''}`;
      log.warn({ code: e.code, err: e.message }, `cannot reach the Git source: keeping what runs, retrying`);
    },
  });
  // The source reports a failed look through onError and never throws (its own polls retry); a look someone asked
  // for (`keystonectl sync`, a webhook) is told it failed, so that `sync` does not answer "nothing new".
  agent.onSync(async () => {
    await source.syncNow();
    if (source.status.failures > 0) throw new Error(`the Git source could not be read: ${lastSourceError ?? 'unknown error'}`);
  });
  outbox.start();

  return {
    source,
    outbox,
    async start() {
      // Commits held at the rollout gate before a restart are held again, from the local clone, before the first look.
      await agent.restoreHolds((commit) => source.revisionAt(commit));
      await source.start();
      const { nextLookAt, lastLookAt } = source.status;
      if (lastLookAt === undefined && nextLookAt !== undefined)
        log.info(
          { device: opts.device, first_look_in_ms: nextLookAt - opts.now() },
          `first look at the Git source in ${Math.ceil((nextLookAt - opts.now()) / 1000)} s: this device's place in the poll interval, so a fleet restarted together does not poll in step (POST /v1/sync looks at once)`,
        );
    },
    async close() {
      await source.close();
      reporting.close();
      outbox.close();
    },
  };
}

function parseOwnerRepo(text: string): { owner: string; repo: string } {
  const m = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(text);
  if (!m) throw new UsageError(`--github-repo must be OWNER/REPO, not "${text}"`);
  return { owner: m[1]!, repo: m[2]! };
}
