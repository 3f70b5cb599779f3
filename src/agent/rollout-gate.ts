// The device's side of a staged rollout (SPEC §14): one read of the fleet's rollout refs for the commits this device
// holds, then the pure gate (core/rollout-gate.ts) for each. Time is the Git host's (the Date of the answer that
// carried the refs), never this device's clock against another's: the bake runs from when this device first saw a
// wave's success, as the host told the time then and tells it now. A read that fails decides nothing: the device
// keeps what it runs until it can read again (a server outage never opens a gate).
import { createHash } from 'node:crypto';
import type { DesiredState } from '../core/desired-state.js';
import { decideGate, type GateDecision, type RolloutReport } from '../core/rollout-gate.js';
import type { Verification } from '../identity/report-verifier.js';
import type { Rollout } from '../core/rollout.js';
import { BUCKETS, failuresPrefix, parseRolloutRef, rolloutPrefixes, type RolloutRef } from '../report/rollout-refs.js';
import type { ReportAdmission } from './report-admission.js';

/**
 * Lists refs under prefixes, with the host's time of the answer (source/ref-lister.ts). `keep` drops every other ref
 * as the answer streams, so that they cost no memory and do not count against the listing's cap.
 */
export interface RolloutRefSource {
  list(
    prefixes: string[],
    opts?: { keep?: (ref: string) => boolean },
  ): Promise<{ refs: Array<{ ref: string; oid: string }>; serverTime?: number }>;
}

/**
 * Only refs that parse as rollout refs are read: anyone who can push reports can push any other name inside the very
 * subtrees read (80,000 under `<wave>/failed/<held commit>/` stopped every read: issue 28, finding 11), and those
 * would never be counted anyway.
 */
const keep = (ref: string): boolean => parseRolloutRef(ref) !== undefined;

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
  /**
   * Its `[agent]` names a version other than the one this device runs (SPEC §17): it would install a package, so it is
   * never a known-good revert, whatever its components — an agent update goes through the waves, an upgrade or a
   * downgrade to a version this device once ran alike (a commit that changed only `[agent]` passed every gate at once).
   */
  installsAgent?: boolean;
  /** Which reports count for this commit (report-admission.ts); absent: every report read (no enrolment here). */
  admission?: ReportAdmission;
}

export interface RolloutGateOptions {
  refs: RolloutRefSource;
  store: RolloutRecall;
  /** This device's clock, when the host gives no time (a local repository). */
  now: () => number;
  /** [0, 1): which buckets a sample takes. */
  random: () => number;
  /** Rollout refs one read aims to stay under: ~140 B each on the wire (~240 B signed), so ~100 KB (~170 KB) at the default. */
  budgetRefs?: number;
}

export const DEFAULT_BUDGET_REFS = 700;
/**
 * git-ls-refs.ts's MAX_REF_PREFIXES, the most one listing asks for (not imported: this module is loaded without Git,
 * for stateDigest, and that one brings the HTTP client).
 */
const MAX_REF_PREFIXES = 4096;

/** The desired state's identity for "ran this before": each unit and its hash, in a stable order. */
export function stateDigest(state: DesiredState): string {
  const lines = state.components.map((c) => `${c.name}\0${c.hash}`).sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

/** `; 2 reports not counted (forged: gw-2; unverified: gw-9)`: why a gate that looks open to a reader of the refs is not. */
function notCounted(refused: ReadonlyArray<{ report: RolloutReport; verification: Verification }>): string {
  if (!refused.length) return '';
  const by = new Map<string, string[]>();
  for (const { report, verification } of refused)
    by.set(verification.verdict, [...(by.get(verification.verdict) ?? []), report.device]);
  const parts = [...by].map(
    ([verdict, devices]) =>
      `${verdict}: ${[...new Set(devices)].slice(0, 3).join(', ')}${new Set(devices).size > 3 ? ' …' : ''}`,
  );
  return `; ${refused.length} report${refused.length === 1 ? '' : 's'} not counted (${parts.join('; ')})`;
}

/** How many of the 256 buckets a sample (buckets and groups of 16) covers. */
const covered = (sample: readonly string[]) => sample.reduce((n, b) => n + (b.length === 1 ? 16 : 1), 0);

export class RolloutGate {
  /** Per wave, what its last read saw: non-failure refs and buckets read. Sizes that wave's next sample. */
  private readonly lastRead = new Map<string, { refs: number; buckets: number }>();

  constructor(private readonly opts: RolloutGateOptions) {}

  /**
   * One read (one request) for every candidate: per wave up to the device's own, the wave whole or a sample of its
   * buckets sized to a share of the budget, plus every failure of each candidate commit in it, whole.
   */
  async decide(
    candidates: readonly GateCandidate[],
  ): Promise<
    { decisions: Map<string, GateDecision>; complete: boolean; refs: number; serverTime: number } | { error: Error }
  > {
    const decisions = new Map<string, GateDecision>();
    // A revert to a known-good state reads nothing.
    const pending = candidates.filter((c) => {
      if (c.installsAgent || this.opts.store.goodState(stateDigest(c.state)) === undefined) return true;
      decisions.set(
        c.commit,
        decideGate({
          rollout: c.rollout,
          wave: c.wave,
          commit: c.commit,
          reports: [],
          seen: () => undefined,
          now: 0,
          knownGood: true,
        }),
      );
      return false;
    });
    if (!pending.length) return { decisions, complete: true, refs: 0, serverTime: this.opts.now() };
    const waves = [...new Set(pending.flatMap((c) => c.rollout.waves.slice(0, c.wave + 1).map((w) => w.name)))];
    const commits = pending.map((c) => c.commit);
    const share = (this.opts.budgetRefs ?? DEFAULT_BUDGET_REFS) / waves.length;
    const samples = new Map(waves.map((w) => [w, this.sample(w, share)] as const));
    // Each bucket and each held commit's failures by its exact subtree: nothing else under a wave is ever sent.
    const prefixes = waves.flatMap((w) => [
      ...rolloutPrefixes([w], samples.get(w)),
      ...commits.map((c) => failuresPrefix(w, c)),
    ]);
    let read;
    try {
      read = await this.read(prefixes);
    } catch (e) {
      return { error: e as Error };
    }
    // The host's clock or none: this device's clock against a time the host gave earlier would let its skew shorten
    // a bake (a local repository's lister gives this machine's time, the one clock there is).
    if (read.serverTime === undefined)
      return {
        error: new Error("the Git host's answer carried no usable Date header: the bake is timed on the host's clock"),
      };
    const reports: RolloutRef[] = [];
    const seenRefs = new Set<string>();
    const inSample = new Map<string, number>();
    for (const r of read.refs) {
      if (seenRefs.has(r.ref)) continue;
      seenRefs.add(r.ref);
      const parsed = parseRolloutRef(r.ref);
      if (!parsed || !samples.has(parsed.wave)) continue;
      const sample = samples.get(parsed.wave);
      const failure = parsed.state === 'failure' || parsed.state === 'error';
      const sampled = sample === undefined || sample.some((b) => parsed.bucket.startsWith(b));
      if (!(sampled || (failure && commits.includes(parsed.commit)))) continue;
      reports.push(parsed);
      if (!failure) inSample.set(parsed.wave, (inSample.get(parsed.wave) ?? 0) + 1);
    }
    const scale: Record<string, number> = {};
    for (const w of waves) {
      const sample = samples.get(w);
      const buckets = sample === undefined ? BUCKETS.length : covered(sample);
      this.lastRead.set(w, { refs: inSample.get(w) ?? 0, buckets });
      if (sample !== undefined) scale[w] = BUCKETS.length / buckets;
    }
    const now = read.serverTime;
    for (const c of pending) {
      // Per commit: each has its own devices/ and revoked.toml, and its own require_enrolled.
      const admitted = c.admission ? await c.admission.admit(reports) : { counted: reports, refused: [] };
      const d = decideGate({
        rollout: c.rollout,
        wave: c.wave,
        commit: c.commit,
        reports: admitted.counted,
        scale,
        seen: (key) => this.opts.store.firstSuccessSeen(c.commit, key),
        now,
        knownGood: false,
      });
      for (const key of d.observe) this.opts.store.recordFirstSuccess(c.commit, key, now);
      // Named: this commit's reports it did not count (those of other commits only place devices in waves).
      const refused = admitted.refused.filter((x) => x.report.commit === c.commit);
      decisions.set(c.commit, d.kind === 'held' ? { ...d, reason: d.reason + notCounted(refused) } : d);
    }
    return { decisions, complete: Object.keys(scale).length === 0, refs: read.refs.length, serverTime: now };
  }

  /**
   * The refs under `prefixes`: one listing, or (past what one ls-refs request may ask: a wave whole is 256 bucket
   * prefixes, so more than 15 waves) one per MAX_REF_PREFIXES, with the earliest of their times: a bake timed from
   * the earlier answer is never shorter than the host's clock says.
   */
  private async read(prefixes: string[]): Promise<{ refs: Array<{ ref: string; oid: string }>; serverTime?: number }> {
    if (prefixes.length <= MAX_REF_PREFIXES) return this.opts.refs.list(prefixes, { keep });
    const refs: Array<{ ref: string; oid: string }> = [];
    let serverTime: number | undefined;
    for (let i = 0; i < prefixes.length; i += MAX_REF_PREFIXES) {
      const part = await this.opts.refs.list(prefixes.slice(i, i + MAX_REF_PREFIXES), { keep });
      refs.push(...part.refs);
      if (part.serverTime === undefined) return { refs };
      serverTime = Math.min(serverTime ?? part.serverTime, part.serverTime);
    }
    return { refs, ...(serverTime !== undefined && { serverTime }) };
  }

  /**
   * A wave whole while its last read fitted its share of the budget; else as many buckets as fit, from a random
   * start, so that each read samples another part of the fleet; undefined: whole. A wave not read yet starts from one
   * bucket (1/256), and a sample grows at most 16-fold from one read to the next: no read is ever the whole of a large
   * fleet on the strength of a small sample that happened to be empty. The estimate counts one ref more than seen,
   * for the same reason. A sample of 16 buckets or more is taken in whole groups of 16 (one hex digit).
   */
  private sample(wave: string, share: number): string[] | undefined {
    const start = Math.floor(this.opts.random() * BUCKETS.length);
    const last = this.lastRead.get(wave);
    if (last === undefined) return [BUCKETS[start]!];
    const perBucket = (last.refs + 1) / last.buckets;
    const most = Math.min(BUCKETS.length, last.buckets * 16);
    if (most === BUCKETS.length && perBucket * BUCKETS.length <= share) return undefined;
    const n = Math.max(1, Math.min(most, BUCKETS.length - 16, Math.floor(share / perBucket)));
    if (n < 16) return Array.from({ length: n }, (_, i) => BUCKETS[(start + i) % BUCKETS.length]!);
    return Array.from({ length: Math.floor(n / 16) }, (_, i) => (((start >> 4) + i) % 16).toString(16));
  }
}
