// What a device remembers of rollouts (SPEC §14) across restarts: when it first saw a wave's success for a commit
// (on the Git host's clock: the bake runs from it, so a restarted agent keeps its place instead of baking again),
// and the digests of the desired states it applied successfully (a commit that brings one back is not held).
import type { TableContext } from './table-context.js';

/** Rows kept of each table: enough for every commit a rollout can still be waiting on. */
const KEEP_OBSERVATIONS = 500;
const KEEP_GOOD_STATES = 100;

export class RolloutMemory {
  private readonly s;

  constructor(private readonly ctx: TableContext) {
    const p = (sql: string) => ctx.db.prepare(sql);
    this.s = {
      seen: p('SELECT first_success_at FROM rollout_observations WHERE revision = ? AND wave = ?').pluck(),
      see: p(
        'INSERT OR IGNORE INTO rollout_observations (revision, wave, first_success_at, recorded_at) VALUES (?, ?, ?, ?)',
      ),
      pruneSeen: p(
        `DELETE FROM rollout_observations WHERE rowid NOT IN (SELECT rowid FROM rollout_observations ORDER BY recorded_at DESC, rowid DESC LIMIT ${KEEP_OBSERVATIONS})`,
      ),
      good: p('SELECT revision FROM good_states WHERE digest = ?').pluck(),
      addGood: p(
        'INSERT INTO good_states (digest, revision, at) VALUES (?, ?, ?) ON CONFLICT (digest) DO UPDATE SET revision = excluded.revision, at = excluded.at',
      ),
      holds: p('SELECT revision FROM rollout_holds ORDER BY position').pluck(),
      clearHolds: p('DELETE FROM rollout_holds'),
      addHold: p('INSERT INTO rollout_holds (revision, position) VALUES (?, ?)'),
      pruneGood: p(
        `DELETE FROM good_states WHERE rowid NOT IN (SELECT rowid FROM good_states ORDER BY at DESC, rowid DESC LIMIT ${KEEP_GOOD_STATES})`,
      ),
    };
  }

  firstSuccessSeen(revision: string, wave: string): number | undefined {
    const v = this.s.seen.get(revision, wave);
    if (v === undefined) return undefined;
    if (!Number.isSafeInteger(v))
      throw this.ctx.read.corrupt('rollout_observations row', 'first_success_at is not an integer');
    return v as number;
  }

  /** The first observation wins: a later call for the same wave and commit changes nothing. */
  recordFirstSuccess(revision: string, wave: string, at: number): void {
    this.ctx.transaction(() => {
      this.s.see.run(revision, wave, Math.round(at), this.ctx.now());
      this.s.pruneSeen.run();
    });
  }

  /** The revision that last ran this desired state successfully, if any did. */
  goodState(digest: string): string | undefined {
    const v = this.s.good.get(digest);
    return typeof v === 'string' ? v : undefined;
  }

  /** The commits held at the gate when last recorded, newest first. */
  heldCommits(): string[] {
    return (this.s.holds.all() as unknown[]).filter((v): v is string => typeof v === 'string');
  }

  setHeldCommits(revisions: readonly string[]): void {
    this.ctx.transaction(() => {
      this.s.clearHolds.run();
      revisions.forEach((r, i) => this.s.addHold.run(r, i));
    });
  }

  recordGoodState(digest: string, revision: string, at: number): void {
    this.ctx.transaction(() => {
      this.s.addGood.run(digest, revision, Math.round(at));
      this.s.pruneGood.run();
    });
  }
}
