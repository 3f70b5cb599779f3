// The applied revision and the replay floor (SPEC §6): what the agent last applied, and the greatest signed time
// ever applied, which only the device owner's repair may lower.
import * as v from 'valibot';
import { int, number, object, refine } from '../core/valid.js';
import { bool, checked, orNull, textSchema as text, timeSchema, type Row, type RowReader } from './row-reader.js';
import { StateStoreError } from './state-store-error.js';
import type { TableContext } from './table-context.js';

export interface AppliedRevision {
  id: string;
  source: string;
  planFile: string;
  /** The fleet.toml target the plan came from (SPEC §13); absent for --plan and manual applies. */
  target?: string;
  /** The device's name, labels and --plan when it was applied (agent/device-identity.ts). */
  identity?: string;
  /** Unix seconds of the signature; undefined exactly when the revision is unsigned. */
  signedAt?: number;
  /** The keys whose signatures counted (absent for unsigned revisions and for rows written before they were kept). */
  signers?: string[];
  /** The device's rollout wave for this commit (SPEC §14); absent outside a staged rollout. */
  wave?: string;
  unsigned: boolean;
  /** ms */
  appliedAt: number;
}

const revisionTable = object({
  id: text,
  source: text,
  planFile: v.string(),
  target: v.optional(text),
  identity: v.optional(v.string()),
  signedAt: v.optional(v.pipe(number(), int(), v.minValue(0))),
  signers: v.optional(v.array(text)),
  wave: v.optional(text),
  unsigned: v.boolean(),
  appliedAt: timeSchema,
});
const revisionSchema: v.GenericSchema<unknown, AppliedRevision> = v.pipe(
  revisionTable,
  refine<v.InferOutput<typeof revisionTable>>((r, ctx) => {
    if (r.unsigned !== (r.signedAt === undefined))
      ctx.addIssue({ message: 'signedAt must be given exactly when the revision is signed', path: ['signedAt'] });
  }),
);

/** The applied_revision row as a record, or KS_STATE_CORRUPT naming the column. */
export function revisionFromRow(read: RowReader, row: Row): AppliedRevision {
  return read.decode(revisionSchema, 'applied_revision row', {
    id: row.id,
    source: row.source,
    planFile: row.plan_file,
    target: row.target ?? undefined,
    identity: row.identity ?? undefined,
    signedAt: row.signed_at ?? undefined,
    signers: row.signers == null ? undefined : read.json(row, 'signers', 'applied_revision row'),
    wave: row.wave ?? undefined,
    unsigned: bool(row.unsigned),
    appliedAt: row.applied_at,
  });
}

/** The applied_revision and replay_floor tables, one row each. */
export class AppliedRevisionTable {
  private readonly s;

  constructor(private readonly ctx: TableContext) {
    const p = (sql: string) => ctx.db.prepare(sql);
    this.s = {
      revision: p('SELECT * FROM applied_revision WHERE slot = 1'),
      setRevision:
        p(`INSERT OR REPLACE INTO applied_revision (slot, id, source, plan_file, target, identity, signed_at, signers, wave, unsigned, applied_at)
                      VALUES (1, @id, @source, @planFile, @target, @identity, @signedAt, @signers, @wave, @unsigned, @appliedAt)`),
      raiseFloor: p(`INSERT INTO replay_floor (slot, signed_at) VALUES (1, ?)
                     ON CONFLICT (slot) DO UPDATE SET signed_at = max(signed_at, excluded.signed_at)`),
      floor: p('SELECT signed_at FROM replay_floor WHERE slot = 1').pluck(),
      lowerFloor: p('UPDATE replay_floor SET signed_at = ? WHERE slot = 1 AND signed_at > ?'),
    };
  }

  get(): AppliedRevision | undefined {
    const row = this.s.revision.get() as Row | undefined;
    return row && revisionFromRow(this.ctx.read, row);
  }

  /** Records the revision and raises the replay floor to its signedAt (never lowers it), atomically. */
  set(r: AppliedRevision): void {
    const v = checked(revisionSchema, r, 'applied revision');
    this.ctx.transaction(() => {
      this.s.setRevision.run({
        ...v,
        target: orNull(v.target),
        identity: orNull(v.identity),
        signedAt: orNull(v.signedAt),
        signers: v.signers ? JSON.stringify(v.signers) : null,
        wave: orNull(v.wave),
        unsigned: v.unsigned ? 1 : 0,
      });
      if (v.signedAt !== undefined) this.s.raiseFloor.run(v.signedAt);
    });
  }

  lowerReplayFloor(signedAt: number): boolean {
    if (!Number.isSafeInteger(signedAt) || signedAt < 0)
      throw new StateStoreError('KS_STATE_INVALID', `replay floor: expected whole seconds ≥ 0, got ${signedAt}`);
    return this.s.lowerFloor.run(signedAt, signedAt).changes > 0;
  }

  lastSignedAt(): number | undefined {
    const v = this.s.floor.get() as unknown;
    if (v === undefined) return undefined;
    if (!Number.isSafeInteger(v))
      throw this.ctx.read.corrupt('replay_floor row', `signed_at: expected an integer, found ${JSON.stringify(v)}`);
    return v as number;
  }
}
