// The agent's side of an agent update (SPEC §17): decide what a revision's [agent] asks of this device, stage the
// package beside the running agent and hand over to it; on probation, say whether the new agent proved itself.
// Putting the previous version back is not this file's: it is packaging/launchers/agent-rollback, a script of the
// package that an update never replaces, run by the launcher (a new agent that does not start), by a systemd timer
// (one that does not report in time) or from here (one that reported failure).
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import semver from 'semver';
import type { AgentSection, DebArch } from '../core/agent-section.js';
import type { Logger } from '../log/logger.js';
import type { RepoReader } from '../source/repo-reader.js';
import { syncDirectory } from '../identity/durable-write.js';
import { readFailed, readTrial, type AgentHome, type AgentUpdateView, type Trial } from './agent-home.js';
import { AgentUpdateError } from './agent-update-error.js';
import { switchCrashPoint } from './switch-crash-point.js';
import { waitOwnLock } from '../runtime/update-lock.js';
import { pruneVersions, restoreStateBefore, switchToVersion } from './agent-versions.js';
import { trialOnStart } from './trial-on-start.js';
import { updateViewOf } from './update-view-of.js';

const run = promisify(execFile);

/** The lock a success and agent-rollback take, so that only one of them ends a trial (agent-rollback takes it with flock). */
export const SWITCH_LOCK = '.switch.lock';

/** The transient timer the launcher arms at each start of a version on probation (packaging/launchers/launch.sh). */
export const DEADLINE_UNIT = 'keystone-agent-deadline';

/** What a revision's [agent] means for this device. */
export type UpdateDecision =
  /** Nothing to switch: no [agent], this very version, or an agent that cannot update itself (said in its view). */
  | { kind: 'none' }
  /** Bad input (no package for this architecture, a wrong digest, a downgrade not allowed, unsigned): refused, `error`. */
  | { kind: 'refuse'; reason: string }
  /** This package was put back on this device before: the revision is a `failure`, and it is not tried again. */
  | { kind: 'failed'; reason: string }
  /** Staged and switched to: the agent is being restarted into it, which takes the revision up again. */
  | { kind: 'handover'; version: string }
  /** Another version, while this one is on probation: taken up again later (after the probation, by whichever runs). */
  | { kind: 'deferred'; reason: string };

export interface AgentUpdaterDeps {
  home: AgentHome;
  /** This agent's version, as `keystone --version` prints it. */
  version: string;
  arch: DebArch | undefined;
  /** Why this agent cannot update itself (not from the package, not under systemd); undefined: it can. */
  unsupported?: string;
  /** The systemd unit the agent runs as (keystone.service). */
  unit: string;
  /** The package's own bundle, whose agent-rollback puts a version back. */
  packageLib: string;
  node: string;
  cacheDir: string;
  /** Each live component's instance (name → a process's pid, `c-` and 12 digits of a container's id). */
  instances: () => Record<string, string>;
  /** A consistent copy of the state store, taken before the switch (StateStore.snapshotTo). */
  snapshot?: (file: string) => void;
  log: Logger;
  now: () => number;
  /** systemctl, and the rollback script: injected by tests. */
  exec?: (file: string, args: string[], env?: NodeJS.ProcessEnv) => Promise<void>;
}

export class AgentUpdater {
  private trial: Trial | undefined;
  private handedOver: string | undefined;
  private unsupportedSeen: { version: string; reason: string } | undefined;
  /** The version a revision named while this agent was on probation (deferred), and that revision. */
  private waiting: { version: string; commit: string } | undefined;
  private readonly exec: NonNullable<AgentUpdaterDeps['exec']>;

  constructor(private readonly d: AgentUpdaterDeps) {
    this.exec = d.exec ?? (async (file, args, env) => void (await run(file, args, { ...(env && { env }) })));
    this.trial = trialOnStart(d);
    if (this.trial)
      d.log.info(
        { version: d.version, commit: this.trial.commit, previous: this.trial.previousVersion },
        'agent update: this agent is on probation until it reports success for the commit',
      );
  }

  /** GET /v1/revision's agent.update. */
  view(): AgentUpdateView | undefined {
    return updateViewOf(this.trial, this.unsupportedSeen, this.d.home, this.waiting);
  }

  /** The state store a newer version migrated, after it was put back: the copy from before the switch goes back. */
  restoreStore(dbFile: string): boolean {
    return restoreStateBefore(this.d.home, dbFile, this.d.now(), this.d.log);
  }

  /**
   * On probation: whether this revision's outcome decides it. The commit it was switched for does; so does a newer
   * commit asking for this very version (the tip moved on). The commit that ran before the switch, resumed at the
   * start, does not: its outcome is the previous agent's.
   */
  settles(revision: string, section: AgentSection | undefined, o: { resumed?: boolean } = {}): boolean {
    if (!this.trial) return false;
    if (revision === this.trial.commit) return true;
    return !o.resumed && section?.version === this.d.version;
  }

  /** The commit a version on probation was switched to for: taken up at its start without waiting for a look or a gate. */
  trialCommit(): string | undefined {
    return this.trial?.commit;
  }

  /** After the store opened: the copy taken before a switch is only for the version it would put back. */
  discardSnapshot(): void {
    if (!this.trial) rmSync(this.d.home.stateBefore, { force: true });
  }

  /** The components the new agent did not adopt as they were before the switch (restarted, or gone). */
  notAdopted(): string[] {
    if (!this.trial) return [];
    const now = this.d.instances();
    return Object.entries(this.trial.pids)
      .filter(([name, id]) => now[name] !== id)
      .map(([name]) => name)
      .sort();
  }

  /** `unsigned`: the revision was taken without its signatures checked (--allow-unsigned): its [agent] is refused. */
  /** Whether `section` asks this agent for another version it can install: a package would be staged for it. */
  installs(section: AgentSection | undefined): boolean {
    return section !== undefined && section.version !== this.d.version && !this.d.unsupported;
  }

  async decide(
    section: AgentSection | undefined,
    rev: { id: string },
    reader: RepoReader,
    o: { unsigned?: boolean } = {},
  ): Promise<UpdateDecision> {
    const d = await this.decideFor(section, rev, reader, o);
    // The version a revision names while this one is on probation, told in the view until another decision.
    this.waiting = d.kind === 'deferred' && section ? { version: section.version, commit: rev.id } : undefined;
    return d;
  }

  /** A revision is taken up: one other than the deferred one supersedes it, which is then no longer told of. */
  takenUp(revision: string): void {
    if (this.waiting && this.waiting.commit !== revision) this.waiting = undefined;
  }

  private async decideFor(
    section: AgentSection | undefined,
    rev: { id: string },
    reader: RepoReader,
    o: { unsigned?: boolean },
  ): Promise<UpdateDecision> {
    // Being restarted into a new version: nothing more is applied by this one.
    if (this.handedOver) return { kind: 'handover', version: this.handedOver };
    if (!section || section.version === this.d.version) return { kind: 'none' };
    const { version } = section;
    // An agent that cannot update itself applies the rest, and says so (in its status), whatever the section says.
    if (this.d.unsupported) {
      if (this.unsupportedSeen?.version !== version)
        this.d.log.warn(
          { version, reason: this.d.unsupported },
          `agent update: the fleet names ${version}; this agent cannot update itself`,
        );
      this.unsupportedSeen = { version, reason: this.d.unsupported };
      return { kind: 'none' };
    }
    // The package is pinned by the signed sha256 only: from a revision whose signatures were not checked, anyone able
    // to push could have root run their agent. Refused as bad input (`error`), like a wrong digest.
    if (o.unsigned)
      return {
        kind: 'refuse',
        reason: `KS_AGENT_UNSIGNED: fleet.toml's [agent] names ${version}, in a revision whose signatures were not checked (--allow-unsigned); an agent update is followed only from a signed revision`,
      };
    // Never from an unproven version: the one to go back to stays the last that worked.
    if (this.trial)
      return {
        kind: 'deferred',
        reason: `agent ${this.d.version} is on probation: ${version} waits until it has proven itself or was put back`,
      };
    const arch = this.d.arch;
    const pkg = arch && section.packages[arch];
    if (!pkg)
      return {
        kind: 'refuse',
        reason: `KS_AGENT_NO_PACKAGE: fleet.toml's [agent] names ${version} but no package for ${arch ?? `this architecture (${process.arch})`}`,
      };
    if (semver.lt(version, this.d.version) && !section.allow_downgrade)
      return {
        kind: 'refuse',
        reason: `KS_AGENT_DOWNGRADE: fleet.toml's [agent] names ${version}, older than this agent (${this.d.version}); a downgrade needs allow_downgrade = true`,
      };
    const failed = readFailed(this.d.home);
    if (failed?.blocks && failed.sha256 === pkg.sha256.toLowerCase())
      return {
        kind: 'failed',
        reason: `KS_AGENT_UPDATE_FAILED: agent ${failed.version} was put back on this device: ${failed.reason}`,
      };
    let dir: string;
    try {
      this.d.log.info({ version, uri: pkg.uri }, 'agent update: staging the package beside this agent');
      // Loaded here only: fetching and unpacking (the artifact modules) are not what an agent needs at every start.
      const { stageAgentPackage } = await import('./stage-agent-package.js');
      dir = await stageAgentPackage({
        home: this.d.home,
        pkg,
        version,
        arch: arch!,
        reader,
        cacheDir: this.d.cacheDir,
        node: this.d.node,
      });
    } catch (e) {
      if (e instanceof AgentUpdateError) return { kind: 'refuse', reason: `${e.code}: ${e.message}` };
      throw e;
    }
    switchCrashPoint('update-staged');
    switchToVersion(this.d, basename(dir), {
      version,
      sha256: pkg.sha256.toLowerCase(),
      commit: rev.id,
      deadline: Math.ceil(section.deadline / 1000),
    });
    this.d.log.info(
      { version, commit: rev.id },
      `agent update: switched to ${version}; restarting ${this.d.unit} into it (the components keep running)`,
    );
    this.handedOver = version;
    await this.exec('systemctl', ['restart', '--no-block', this.d.unit]);
    return { kind: 'handover', version };
  }

  /**
   * On probation: the revision that decides it ended. Success commits the new version. Anything else puts the previous
   * one back; `blocks` when the agent itself did not work (the package is not tried again), not when the new agent
   * worked and the commit's plan failed (the next commit naming it tries again).
   */
  async settle(
    outcome: 'success' | 'failure',
    reason: string,
    o: { blocks: boolean } = { blocks: true },
  ): Promise<void> {
    const trial = this.trial;
    if (!trial) return;
    this.trial = undefined;
    if (outcome === 'success') {
      switchCrashPoint('update-proven');
      // Against agent-rollback (the deadline's timer may be running it now): one of the two, under the same lock.
      const lock = await waitOwnLock(join(this.d.home.dir, SWITCH_LOCK));
      try {
        if (readTrial(this.d.home)?.since !== trial.since) {
          // Put back already: this agent is being restarted into the previous one.
          this.handedOver = trial.previousVersion;
          this.d.log.warn(
            { version: trial.version, commit: trial.commit },
            'agent update: the deadline put the previous version back before this success was recorded',
          );
          return;
        }
        rmSync(this.d.home.trial, { force: true });
        rmSync(this.d.home.trialStarts, { force: true });
        syncDirectory(this.d.home.dir);
        switchCrashPoint('update-after-commit');
        // A proven version: an earlier failure, and the copy of the store taken for going back, say nothing any more.
        rmSync(this.d.home.failed, { force: true });
        rmSync(this.d.home.stateBefore, { force: true });
      } finally {
        await lock.release();
      }
      this.d.log.info(
        { version: trial.version, commit: trial.commit },
        `agent update: ${trial.version} reported success; it stays`,
      );
      await this.exec('systemctl', ['stop', `${DEADLINE_UNIT}.timer`]).catch(() => undefined);
      pruneVersions(this.d.home, trial.previous);
      return;
    }
    // Being put back: nothing more is applied by this version.
    this.handedOver = trial.previousVersion;
    this.d.log.error(
      { version: trial.version, commit: trial.commit, reason },
      `agent update: ${trial.version} did not prove itself; putting ${trial.previousVersion || 'the previous version'} back`,
    );
    const args = [
      join(this.d.packageLib, 'agent-rollback'),
      '--restart',
      ...(o.blocks ? [] : ['--retry']),
      `the new agent reported ${reason}`,
    ];
    await this.exec('/bin/sh', args, {
      ...process.env,
      KEYSTONE_AGENT_HOME: this.d.home.dir,
      KEYSTONE_UNIT: this.d.unit,
    });
  }
}
