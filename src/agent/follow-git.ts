// An agent that follows Git (`keystone agent --repo`): the Git source, the commit statuses it reports (outbox → Git
// notes and/or the GitHub API) registered with outcomes.ts, and the `--on-failure rollback` listener.
import { join } from 'node:path';
import { packageVersion } from '../package-manifest.js';
import { isCommitId } from '../git/commit-id.js';
import { GIT_CACHE_DIR, NOTES_CACHE_DIR } from '../state-dir/layout.js';
import { FLEET_FILE } from '../core/fleet.js';
import { formatLabels, type Labels } from '../core/labels.js';
import type { ReportSigner } from '../identity/report-signature.js';
import type { Logger } from '../log/logger.js';
import { GitSource } from '../source/git-source.js';
import { statusContext, type StatusReporter } from '../report/commit-status.js';
import { GitNotesReporter } from '../report/git-notes-reporter.js';
import { GitHubStatusReporter } from '../report/github-status-reporter.js';
import { StatusOutbox } from '../report/status-outbox.js';
import type { StateStore } from '../store/state-store.js';
import type { Agent } from './agent.js';
import { commitReports } from './commit-reporting.js';
import { deviceIdentity } from './device-identity.js';
import { failedUnits, failureLogTail } from './failure-log-tail.js';
import { rollBackOnFailure } from './rollback-on-failure.js';
import { reportsRemote, type GitSettings } from './run-settings.js';

export interface GitFollowOptions extends Omit<GitSettings, 'kind'> {
  stateDir: string;
  /** Absent when fleet.toml picks the plan. */
  planFile?: string;
  device: string;
  /** The device's labels (`--label`), which fleet.toml's targets select by. */
  labels: Labels;
  log: Logger;
  random: () => number;
  now: () => number;
  /** Signs this device's reports (SPEC §15). */
  reportSigner?: ReportSigner;
  /** This device's certificate, published beside its reports. */
  certificate?: string;
}

export interface GitFollowing {
  source: GitSource;
  /** Starts the source; says when the first look is, if it waits for the device's place in the poll interval. */
  start(): Promise<void>;
  outbox: StatusOutbox;
  /** Stops looking at the source: nothing new is offered. Reports still go out (close() ends them). */
  stopLooking(): Promise<void>;
  /** Ends reporting: call once the agent has closed, so that the outcome of an apply that ended meanwhile is reported. */
  close(): Promise<void>;
}

/**
 * The last commit applied from Git (success or failure: it ran on the device), which every new commit must descend
 * from; a manual apply or a refused commit in between does not count.
 */
export function lastAppliedCommit(store: Pick<StateStore, 'appliedRevision' | 'history'>): string | undefined {
  const applied = store.appliedRevision()?.id;
  if (applied !== undefined && isCommitId(applied)) return applied;
  return store
    .history({ limit: 100 })
    .find((h) => isCommitId(h.revision) && h.outcome !== 'rejected' && h.outcome !== undefined)?.revision;
}

export function followGit(agent: Agent, opts: GitFollowOptions): GitFollowing {
  const log = opts.log.child({ module: 'agent' });
  const reporters: StatusReporter[] = [];
  if (opts.status.includes('git-notes')) {
    const reports = reportsRemote(opts);
    // The followed repository's credential then has to push: a device holding it could change what every device runs.
    if (!reports.separate)
      log.warn(
        { repo: reports.repo },
        'reports go to the followed repository, so its credential on this device can push to it: give reports a repository of their own (--status-repo, --status-token-file; docs/security.md)',
      );
    reporters.push(
      new GitNotesReporter({
        repository: reports.repo,
        cacheDir: join(opts.stateDir, NOTES_CACHE_DIR),
        ...(reports.token !== undefined && { token: reports.token }),
        now: opts.now,
        ...(opts.reportSigner && { signer: opts.reportSigner }),
        ...(opts.certificate !== undefined && { certificate: opts.certificate }),
      }),
    );
  }
  if (opts.status.includes('github') && opts.github) reporters.push(new GitHubStatusReporter(opts.github));
  const outbox = new StatusOutbox({
    store: agent.store,
    reporters,
    now: opts.now,
    random: opts.random,
    log: opts.log.child({ module: 'status' }),
  });
  agent.outcomes.reportTo(
    commitReports({
      outbox,
      context: statusContext(opts.device),
      now: opts.now,
      rolloutKeep: () => agent.rolloutKeep(),
      // SPEC §8: what a report says beside its state. A failure's log lines are scrubbed of what the units were given in
      // the apply and of what runs now (a composite rolled back to its previous members writes to the same logs).
      agentVersion: packageVersion(),
      health: () => agent.health(),
      failureLog: (failed, components) =>
        failureLogTail(
          failedUnits(failed, [...components, ...(agent.engine.desired?.components ?? [])], (n) => agent.logDirOf(n)),
        ).map((l) => agent.scrubSecrets(l)),
      onDetailsError: (e) =>
        log.warn({ err: e as Error }, 'reading what a report says beside its state failed: it goes without'),
    }),
  );
  const stopRollbacks =
    opts.onFailure === 'rollback'
      ? rollBackOnFailure({
          outcomes: agent.outcomes,
          store: agent.store,
          offer: (r) => agent.offer(r),
          revisionAt: (c) => source.revisionAt(c),
          log: opts.log,
        })
      : () => undefined;

  // Other labels, another name or another --plan since the last apply: the plan may have changed, so no waiting.
  const recorded = agent.store.appliedRevision()?.identity;
  const identityChanged =
    recorded !== undefined && recorded !== deviceIdentity({ device: opts.device, labels: opts.labels }, opts.planFile);
  if (identityChanged)
    log.info(
      { device: opts.device, labels: formatLabels(opts.labels), plan: opts.planFile ?? 'from fleet.toml' },
      "this device's name, labels or --plan changed since the last apply: looking at the Git source at once",
    );
  let lastSourceError: string | undefined;
  const source = new GitSource({
    repo: opts.repo,
    ref: opts.ref,
    cacheDir: join(opts.stateDir, GIT_CACHE_DIR),
    ...(opts.token !== undefined && { token: opts.token }),
    pollMs: opts.pollMs,
    random: opts.random,
    now: opts.now,
    // A fleet rebooted together spreads its first looks by device name (SPEC §13).
    device: opts.device,
    lookAtOnce: identityChanged,
    lastAppliedCommit: () => lastAppliedCommit(agent.store),
    allowHistoryRewrite: opts.allowHistoryRewrite,
    onRevision: (r) => agent.offer(r),
    onRejected: ({ commit, code, reason }) => {
      agent.outcomes.refusedBySource(commit, opts.planFile ?? FLEET_FILE, `${code}: ${reason}`);
      log.error({ revision: commit, code, reason }, 'commit refused; still running the previous one');
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
    if (source.status.failures > 0)
      throw new Error(`the Git source could not be read: ${lastSourceError ?? 'unknown error'}`);
  });
  outbox.start();

  return {
    source,
    outbox,
    async start() {
      // What runs is resumed, and commits held at the rollout gate before a restart are held again, from the local
      // clone, before the first look.
      await agent.restoreHolds((commit) => source.revisionAt(commit));
      await source.start();
      const { nextLookAt, lastLookAt } = source.status;
      if (lastLookAt === undefined && nextLookAt !== undefined)
        log.info(
          { device: opts.device, first_look_in_ms: nextLookAt - opts.now() },
          `first look at the Git source in ${Math.ceil((nextLookAt - opts.now()) / 1000)} s: this device's place in the poll interval, so a fleet restarted together does not poll in step (POST /v1/sync looks at once)`,
        );
    },
    stopLooking: () => source.close(),
    async close() {
      await source.close();
      stopRollbacks();
      agent.outcomes.reportTo(undefined);
      outbox.close();
    },
  };
}
