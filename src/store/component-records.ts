// The components table (SPEC §5): one record per component the agent runs, with its restart budget and
// instance, and the supervisor's small writes, one statement each.
import type Sqlite from 'better-sqlite3';
import * as v from 'valibot';
import { int, integer, number, object, record, refine, variant } from '../core/valid.js';
import { cutLine } from '../core/line-bound.js';
import type { ActualState } from '../core/diff.js';
import type { RestartBudget } from '../core/restart-policy.js';
import type { InstanceRef } from '../runtime/runtime.js';
import { COMPONENT_STATES, type ComponentDependency, type ComponentState } from './component-state.js';
import { bool, checked, orNull, textSchema as text, timeSchema, type Row, type RowReader } from './row-reader.js';
import { StateStoreError } from './state-store-error.js';
import type { TableContext } from './table-context.js';

export { COMPONENT_STATES, type ComponentDependency, type ComponentState };
/** The states in which a component counts as running for the diff: it has (or is getting) a live instance. */
export const LIVE_STATES: ReadonlySet<ComponentState> = new Set([
  'installing',
  'starting',
  'running',
  'unhealthy',
  'backoff',
]);

/** One component as the agent last recorded it; `restarts` and `healthySince` are its RestartBudget. */
export interface ComponentRecord extends RestartBudget {
  name: string;
  hash: string;
  version: string;
  runtime: 'process' | 'container';
  /** Start order, set by the writer; ties are broken by name. */
  position: number;
  dependencies: ComponentDependency[];
  /** The last instance started; its kind matches `runtime`. Only meaningful while the state is live. */
  instance?: InstanceRef;
  state: ComponentState;
  /** Held back by an operator (or by the supervisor); crash-looping holds on its own. */
  held: boolean;
  /** Why it is in this state, e.g. "crash-looping after 10 restarts". */
  reason?: string;
  /** ms, when it entered this state. */
  since: number;
  /** The revision that last started or changed it. */
  revision?: string;
  /** The configuration and bound values it was started with (`config.http.port` → `8080`). */
  inputs?: Record<string, string>;
  /** How its last instance ended (ms `at`); kept across restarts and revisions, written only by recordExit. */
  lastExit?: LastExit;
}

export interface LastExit {
  code: number | null;
  signal: string | null;
  at: number;
}

const dependencySchema = object({ component: text, type: v.picklist(['hard', 'ordering']) });
const instanceSchema = variant('kind', [
  object({ kind: v.literal('process'), pid: v.pipe(number(), int(), v.gtValue(0)), startTime: text }),
  object({ kind: v.literal('container'), id: text }),
]);
const stateSchema = v.picklist(COMPONENT_STATES);
const lastExitSchema = object({ code: v.nullable(integer()), signal: v.nullable(v.string()), at: timeSchema });

const componentTable = object({
  name: text,
  hash: text,
  version: text,
  runtime: v.picklist(['process', 'container']),
  position: integer(),
  dependencies: v.array(dependencySchema),
  instance: v.optional(instanceSchema),
  state: stateSchema,
  restarts: v.pipe(number(), int(), v.minValue(0)),
  healthySince: v.optional(timeSchema),
  held: v.boolean(),
  reason: v.optional(v.string()),
  since: timeSchema,
  revision: v.optional(v.string()),
  inputs: v.optional(record(v.string(), v.string())),
  lastExit: v.optional(lastExitSchema),
});
const componentSchema: v.GenericSchema<unknown, ComponentRecord> = v.pipe(
  componentTable,
  refine<v.InferOutput<typeof componentTable>>((c, ctx) => {
    if (c.instance && c.instance.kind !== c.runtime)
      ctx.addIssue({ message: 'the instance kind differs from the runtime', path: ['instance', 'kind'] });
  }),
);

/** A components row as a record, or KS_STATE_CORRUPT naming the row and the column. */
export function componentFromRow(read: RowReader, row: Row): ComponentRecord {
  const what = `components row ${JSON.stringify(row.name)}`;
  return read.decode(componentSchema, what, {
    name: row.name,
    hash: row.hash,
    version: row.version,
    runtime: row.runtime,
    position: row.position,
    dependencies: read.json(row, 'dependencies', what) ?? row.dependencies,
    instance: read.json(row, 'instance', what),
    state: row.state,
    restarts: row.restarts,
    healthySince: row.healthy_since ?? undefined,
    held: bool(row.held),
    reason: row.reason ?? undefined,
    since: row.since,
    revision: row.revision ?? undefined,
    inputs: row.inputs == null ? undefined : read.json(row, 'inputs', what),
    lastExit: row.last_exit == null ? undefined : read.json(row, 'last_exit', what),
  });
}

/** The diff's view of the records, in the order given. */
export function actualStateOf(records: readonly ComponentRecord[]): ActualState {
  return {
    components: records.map((c) => ({
      name: c.name,
      hash: c.hash,
      version: c.version,
      running: LIVE_STATES.has(c.state),
      held: c.state === 'crash-looping' || c.held,
      dependencies: c.dependencies,
      ...(c.inputs && { inputs: c.inputs }),
    })),
  };
}

const COMPONENT_COLUMNS =
  'name, hash, version, runtime, position, dependencies, instance, state, restarts, healthy_since, held, reason, since, revision, inputs';

/** Read with the rest, never written by upsert: a new revision's record keeps how the last instance ended. */
const READ_COLUMNS = `${COMPONENT_COLUMNS}, last_exit`;

function prepare(db: Sqlite.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    components: p(`SELECT ${READ_COLUMNS} FROM components ORDER BY position, name`),
    component: p(`SELECT ${READ_COLUMNS} FROM components WHERE name = ?`),
    upsert: p(`INSERT INTO components (${COMPONENT_COLUMNS})
               VALUES (@name, @hash, @version, @runtime, @position, @dependencies, @instance, @state, @restarts, @healthySince, @held, @reason, @since, @revision, @inputs)
               ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, version = excluded.version, runtime = excluded.runtime,
                 position = excluded.position, dependencies = excluded.dependencies, instance = excluded.instance, state = excluded.state,
                 restarts = excluded.restarts, healthy_since = excluded.healthy_since, held = excluded.held, reason = excluded.reason,
                 since = excluded.since, revision = excluded.revision, inputs = excluded.inputs`),
    remove: p('DELETE FROM components WHERE name = ?'),
    start:
      p(`UPDATE components SET instance = @instance, state = 'starting', since = @at, reason = NULL, healthy_since = NULL
              WHERE name = @name AND runtime = @kind`),
    state:
      p(`UPDATE components SET since = CASE WHEN state = @state THEN since ELSE @at END, state = @state, reason = @reason
              WHERE name = @name`),
    restart: p('UPDATE components SET restarts = restarts + 1 WHERE name = ? RETURNING restarts').pluck(),
    healthy: p('UPDATE components SET healthy_since = ? WHERE name = ?'),
    resetRestarts: p('UPDATE components SET restarts = 0 WHERE name = ?'),
    held: p('UPDATE components SET held = ? WHERE name = ?'),
    exit: p('UPDATE components SET last_exit = ? WHERE name = ?'),
  };
}

/** Reads and writes of the components table; uncached (the facade keeps the read cache). */
export class ComponentRecords {
  private readonly s;

  constructor(private readonly ctx: TableContext) {
    this.s = prepare(ctx.db);
  }

  /** In start order (position, then name). */
  all(): ComponentRecord[] {
    return (this.s.components.all() as Row[]).map((row) => componentFromRow(this.ctx.read, row));
  }

  get(name: string): ComponentRecord | undefined {
    const row = this.s.component.get(name) as Row | undefined;
    return row && componentFromRow(this.ctx.read, row);
  }

  upsert(rec: ComponentRecord): void {
    const v = checked(componentSchema, rec, `component ${JSON.stringify((rec as Partial<ComponentRecord>).name)}`);
    this.s.upsert.run({
      ...v,
      dependencies: JSON.stringify(v.dependencies),
      instance: v.instance ? JSON.stringify(v.instance) : null,
      healthySince: orNull(v.healthySince),
      held: v.held ? 1 : 0,
      reason: orNull(v.reason === undefined ? undefined : cutLine(v.reason)),
      revision: orNull(v.revision),
      inputs: v.inputs ? JSON.stringify(v.inputs) : null,
    });
  }

  remove(name: string): boolean {
    return this.s.remove.run(name).changes > 0;
  }

  recordStart(name: string, instance: InstanceRef, startedAt: number): void {
    const ref = checked(instanceSchema, instance, `instance of ${JSON.stringify(name)}`);
    checked(timeSchema, startedAt, 'startedAt');
    const changes = this.s.start.run({ name, instance: JSON.stringify(ref), at: startedAt, kind: ref.kind }).changes;
    if (changes === 0) {
      const rec = this.get(name);
      if (rec)
        throw new StateStoreError(
          'KS_STATE_INVALID',
          `component ${JSON.stringify(name)} runs as a ${rec.runtime}, not a ${ref.kind}`,
        );
      this.missing(name);
    }
  }

  recordState(name: string, state: ComponentState, reason?: string): void {
    checked(stateSchema, state, 'state');
    // A reason may quote a component's output: held to one line's bound.
    this.expectOne(
      name,
      this.s.state.run({
        name,
        state,
        reason: orNull(reason === undefined ? undefined : cutLine(reason)),
        at: this.ctx.now(),
      }).changes,
    );
  }

  recordRestart(name: string): number {
    const n = this.s.restart.get(name) as number | undefined;
    if (n === undefined) this.missing(name);
    return n;
  }

  recordHealthy(name: string, at: number): void {
    checked(timeSchema, at, 'healthy time');
    this.expectOne(name, this.s.healthy.run(at, name).changes);
  }

  resetRestarts(name: string): void {
    this.expectOne(name, this.s.resetRestarts.run(name).changes);
  }

  recordHeld(name: string, held: boolean): void {
    this.expectOne(name, this.s.held.run(held ? 1 : 0, name).changes);
  }

  recordExit(name: string, exit: LastExit): void {
    const v = checked(lastExitSchema, exit, `last exit of ${JSON.stringify(name)}`);
    this.expectOne(name, this.s.exit.run(JSON.stringify(v), name).changes);
  }

  private expectOne(name: string, changes: number): void {
    if (changes === 0) this.missing(name);
  }

  private missing(name: string): never {
    throw new StateStoreError('KS_STATE_NOT_FOUND', `no component ${JSON.stringify(name)} in the state store`);
  }
}
