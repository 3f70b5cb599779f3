// The groups a revision could not update (SPEC §12): a group rolled back stays at its previous members while that
// revision is applied again, across agent restarts, so a healthy composite is not retried and restarted.
import type { TableContext } from './table-context.js';

/** The group_rollbacks table. */
export class GroupRollbacks {
  private readonly s;

  constructor(private readonly ctx: TableContext) {
    const p = (sql: string) => ctx.db.prepare(sql);
    this.s = {
      rollbacks: p('SELECT grp, revision FROM group_rollbacks ORDER BY grp'),
      addRollback: p('INSERT OR REPLACE INTO group_rollbacks (grp, revision, at) VALUES (?, ?, ?)'),
      clearRollbacks: p('DELETE FROM group_rollbacks'),
    };
  }

  all(): Array<{ group: string; revision: string }> {
    return (this.s.rollbacks.all() as Array<{ grp: string; revision: string }>).map((r) => ({
      group: r.grp,
      revision: r.revision,
    }));
  }

  record(group: string, revision: string): void {
    this.s.addRollback.run(group, revision, this.ctx.now());
  }

  clear(): void {
    this.s.clearRollbacks.run();
  }
}
