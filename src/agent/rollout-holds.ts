// The commits a device holds at its rollout gate (SPEC §14), newest first, and the decision to apply one: one read of
// the fleet's reports for all of them, then the newest whose gate is open is applied (older ones go: they are behind
// what runs then; newer ones stay held), halted ones are dropped for good. Called only from the agent's one loop, so
// holding, rechecking and applying never overlap. Each held commit is reported once per change of its reason's kind
// (another wave waited for, halted), not on every look.
import type { AgentSection } from '../core/agent-section.js';
import type { MaintenanceWindow } from '../core/maintenance-window.js';
import type { DesiredState } from '../core/desired-state.js';
import type { Rollout } from '../core/rollout.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import type { ReportAdmission } from './report-admission.js';
import type { RolloutGate } from './rollout-gate.js';

/** Commits held at once: enough for a burst of pushes during a long bake, bounded. */
export const MAX_HELD = 8;

/** A commit verified and resolved for this device, held at its rollout gate. */
export interface Candidate {
  rev: Revision;
  state: DesiredState;
  /** Its `[agent]` would install another agent version here (rollout-gate.ts: never a known-good revert). */
  installsAgent?: boolean;
  planFile: string;
  target?: string;
  signedAt?: number;
  /** The keys whose signatures counted (their ids, as `keystonectl verify` names them). */
  signers?: string[];
  /** When the agent took it up (ms). */
  began: number;
  rollout: Rollout;
  /** The device's wave in the commit's fleet.toml: index and name. */
  wave: number;
  waveName: string;
  reason?: string;
  /** When the gate was last read for it (ms, this device's clock). */
  checkedAt?: number;
  /** Which of the fleet's reports count for it (SPEC §15). */
  admission?: ReportAdmission;
  /** The agent version the commit asks this device to run (SPEC §17). */
  agent?: AgentSection;
  /** The device's target's maintenance window (SPEC §19). */
  window?: MaintenanceWindow;
}

export interface RolloutHold {
  revision: string;
  target?: string;
  wave: string;
  reason: string;
  checkedAt?: number;
}

export interface HeldEvent {
  revision: string;
  target?: string;
  wave: string;
  reason: string;
  halted: boolean;
}

export interface RolloutHoldsOptions {
  /** Absent: this device cannot see the fleet's reports; every staged commit stays held, saying `unavailable`. */
  gate?: RolloutGate;
  unavailable?: string;
  /** How often held commits are read again (±10 %). */
  recheckMs: number;
  random: () => number;
  now: () => number;
  log: Logger;
  /** A held commit's reason changed kind: report it. */
  onHeld: (e: HeldEvent) => void;
  /** Applies a commit whose gate opened (the agent's apply). */
  apply: (c: Candidate) => Promise<void>;
  /** Asks the agent's loop to call recheck() (a timer fired). */
  wantRecheck: () => void;
  /** Why nothing held may be applied now (a forced manual apply suspends the Git sync), or undefined. */
  paused?: () => string | undefined;
  /** Records the held commits (newest first) whenever they change, for an agent restarted later. */
  persist?: (revisions: string[]) => void;
}

export class RolloutHolds {
  private candidates: Candidate[] = [];
  /** Per held commit, the kind of reason last reported. */
  private readonly reported = new Map<string, string>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly opts: RolloutHoldsOptions) {}

  get size(): number {
    return this.candidates.length;
  }

  /** Holds a newly offered commit (newest first; the same commit offered again replaces its entry) and decides. */
  async hold(c: Candidate): Promise<void> {
    this.set([c, ...this.candidates.filter((x) => x.rev.id !== c.rev.id)].slice(0, MAX_HELD));
    await this.recheck();
  }

  /** One read for every held commit, then apply the newest whose gate is open. */
  async recheck(): Promise<void> {
    if (!this.candidates.length) return;
    const { gate, log } = this.opts;
    const paused = this.opts.paused?.();
    if (paused !== undefined) {
      for (const c of this.candidates) this.note(c, `held: ${paused}`, 'paused', false);
      this.schedule();
      return;
    }
    if (!gate) {
      for (const c of this.candidates)
        this.note(
          c,
          `held: ${this.opts.unavailable ?? "this device cannot read the fleet's rollout reports"}`,
          'unavailable',
          false,
        );
      return;
    }
    const result = await gate.decide(
      this.candidates.map((c) => ({
        commit: c.rev.id,
        rollout: c.rollout,
        wave: c.wave,
        state: c.state,
        ...(c.installsAgent && { installsAgent: true }),
        ...(c.admission && { admission: c.admission }),
      })),
    );
    if ('error' in result) {
      log.warn(
        { err: result.error.message, held: this.candidates.map((c) => c.rev.id) },
        "cannot read the fleet's rollout reports: holding, and keeping what runs",
      );
      this.schedule();
      return;
    }
    const checkedAt = this.opts.now();
    const keep: Candidate[] = [];
    let open: Candidate | undefined;
    for (const c of this.candidates) {
      const d = result.decisions.get(c.rev.id)!;
      c.checkedAt = checkedAt;
      if (d.kind === 'open') {
        log.info({ revision: c.rev.id, wave: c.waveName, reason: d.reason }, 'rollout gate open');
        open = c;
        break;
      }
      if (d.kind === 'halted') this.note(c, `${d.reason}; not applied`, 'halted', true);
      else {
        this.note(c, d.reason, `held:${d.waitingFor}`, false);
        keep.push(c);
      }
    }
    // Older than the one opened: behind what is about to run.
    this.set(keep);
    if (open) {
      this.reported.delete(open.rev.id);
      await this.opts.apply(open);
    }
    this.schedule();
  }

  holds(): RolloutHold[] {
    return this.candidates.map((c) => ({
      revision: c.rev.id,
      ...(c.target !== undefined && { target: c.target }),
      wave: c.waveName,
      reason: c.reason ?? 'held: not read yet',
      ...(c.checkedAt !== undefined && { checkedAt: c.checkedAt }),
    }));
  }

  ids(): string[] {
    return this.candidates.map((c) => c.rev.id);
  }

  /**
   * Drops every held commit: a newer commit is being applied without the gate (its fleet.toml has no [rollout]), so
   * each of them is behind what runs from now on.
   */
  drop(): void {
    if (this.candidates.length)
      this.opts.log.info({ dropped: this.ids() }, 'held commits dropped: a newer commit is applied');
    this.close();
    this.opts.persist?.([]);
  }

  private set(candidates: Candidate[]): void {
    const before = this.ids().join();
    this.candidates = candidates;
    if (this.ids().join() !== before) this.opts.persist?.(this.ids());
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.candidates = [];
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.candidates.length) return;
    // ±10 %: a fleet held at one gate does not read in step.
    this.timer = setTimeout(
      () => this.opts.wantRecheck(),
      Math.round(this.opts.recheckMs * (0.9 + 0.2 * this.opts.random())),
    );
    this.timer.unref();
  }

  private note(c: Candidate, reason: string, kind: string, halted: boolean): void {
    if (c.reason !== reason)
      this.opts.log.info(
        { revision: c.rev.id, wave: c.waveName, ...(c.target !== undefined && { target: c.target }) },
        reason,
      );
    c.reason = reason;
    if (this.reported.get(c.rev.id) === kind) return;
    this.reported.set(c.rev.id, kind);
    // Bounded: one entry per commit held since the agent started.
    if (this.reported.size > 64) this.reported.delete(this.reported.keys().next().value!);
    this.opts.onHeld({
      revision: c.rev.id,
      ...(c.target !== undefined && { target: c.target }),
      wave: c.waveName,
      reason,
      halted,
    });
  }
}
