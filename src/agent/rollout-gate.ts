// The device's side of a staged rollout (SPEC §14): one read of the fleet's rollout refs for the commits this device
// holds, then the pure gate (core/rollout-gate.ts) for each. Time is the Git host's (the Date of the answer that
// carried the refs), never this device's clock against another's: the bake runs from when this device first saw a
// wave's success, as the host told the time then and tells it now. A read that fails decides nothing: the device
// keeps what it runs until it can read again (a server outage never opens a gate).
import { createHash } from 'node:crypto';
import type { DesiredState } from '../core/desired-state.js';
import { decideGate, type GateDecision, type RolloutReport } from '../core/rollout-gate.js';
import type { Rollout } from '../core/rollout.js';
import { BUCKETS, parseRolloutRef, rolloutPrefixes } from '../status/rollout-refs.js';

/** Lists refs under prefixes, with the host's time of the answer (source/ref-lister.ts). */
export interface RolloutRefSource {
  list(prefixes: string[]): Promise<{ refs: Array<{ ref: string; oid: string }>; serverTime?: number }>;
}

/** What the gate needs of the store: what it saw first, per commit and key (GateInput.seen). */
export interface RolloutRecall {
  firstSuccessSeen(revision: string, key: string): number | undefined;
  recordFirstSuccess(revision: string, key: string, at: number): void;
  goodState(digest: string): string | undefined;
}

/** A commit this device verified and resolved, waiting at the gate. */
export interface GateCandidate {
  commit: string;
  rollout: Rollout;
  /** This device's wave in that commit's fleet.toml. */
  wave: number;
  state: DesiredState;
}

export interface RolloutGateOptions {
  refs: RolloutRefSource;
  store: RolloutRecall;
  /** This device's clock, when the host gives no time (a local repository). */
  now: () => number;
  /** [0, 1): which buckets a sample takes. */
  random: () => number;
  /** Rollout refs one read aims to stay under: ~140 B each on the wire, so ~100 KB at the default. */
  budgetRefs?: number;
}

export const DEFAULT_BUDGET_REFS = 700;

/** The desired state's identity for "ran this before": each unit and its hash, in a stable order. */
export function stateDigest(state: DesiredState): string {
  const lines = state.components.map((c) => `${c.name}\0${c.hash}`).sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

export class RolloutGate {
  /** Refs the last read returned per bucket read: sizes the next sample. */
  private perBucket = 0;

  constructor(private readonly opts: RolloutGateOptions) {}

  /** One read for every candidate; undefined when the read failed (nothing is decided then). */
  async decide(candidates: readonly GateCandidate[]): Promise<{ decisions: Map<string, GateDecision>; complete: boolean; refs: number; serverTime: number } | { error: Error }> {
    const decisions = new Map<string, GateDecision>();
    // A revert to a known-good state reads nothing.
    const pending = candidates.filter((c) => {
      if (this.opts.store.goodState(stateDigest(c.state)) === undefined) return true;
      decisions.set(c.commit, decideGate({ rollout: c.rollout, wave: c.wave, commit: c.commit, reports: [], complete: true, seen: () => undefined, now: 0, knownGood: true }));
      return false;
    });
    if (!pending.length) return { decisions, complete: true, refs: 0, serverTime: this.opts.now() };
    const waves = [...new Set(pending.flatMap((c) => c.rollout.waves.slice(0, c.wave + 1).map((w) => w.name)))];
    const buckets = this.sample();
    let read;
    try {
      read = await this.opts.refs.list(rolloutPrefixes(waves, buckets));
    } catch (e) {
      return { error: e as Error };
    }
    const reports: RolloutReport[] = [];
    for (const r of read.refs) {
      const parsed = parseRolloutRef(r.ref);
      if (parsed && (buckets === undefined || buckets.some((b) => parsed.bucket.startsWith(b)))) reports.push(parsed);
    }
    this.perBucket = read.refs.length / (buckets === undefined ? BUCKETS.length : buckets.reduce((n, b) => n + (b.length === 1 ? 16 : 1), 0));
    const complete = buckets === undefined;
    const now = read.serverTime ?? this.opts.now();
    for (const c of pending) {
      const d = decideGate({
        rollout: c.rollout,
        wave: c.wave,
        commit: c.commit,
        reports,
        complete,
        seen: (key) => this.opts.store.firstSuccessSeen(c.commit, key),
        now,
        knownGood: false,
      });
      for (const key of d.observe) this.opts.store.recordFirstSuccess(c.commit, key, now);
      decisions.set(c.commit, d);
    }
    return { decisions, complete, refs: read.refs.length, serverTime: now };
  }

  /**
   * Every bucket while the last read fitted the budget; else as many as fit, from a random start, so that each read
   * samples another part of the fleet. Undefined: all of them. A sample of 16 buckets or more is taken in whole
   * groups of 16 (one hex digit: one ref prefix each), so a request never names more than 16 prefixes per wave.
   */
  private sample(): string[] | undefined {
    const budget = this.opts.budgetRefs ?? DEFAULT_BUDGET_REFS;
    if (this.perBucket * BUCKETS.length <= budget) return undefined;
    const n = Math.max(1, Math.min(BUCKETS.length - 16, Math.floor(budget / this.perBucket)));
    const start = Math.floor(this.opts.random() * BUCKETS.length);
    if (n < 16) return Array.from({ length: n }, (_, i) => BUCKETS[(start + i) % BUCKETS.length]!);
    return Array.from({ length: Math.floor(n / 16) }, (_, i) => (((start >> 4) + i) % 16).toString(16));
  }
}
