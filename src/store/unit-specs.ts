// What a grouped component last started healthy from (SPEC §12), kept in its components row for a composite's
// rollback; read apart from the record, and only when an apply begins.
import type { DesiredComponent } from '../core/desired-state.js';
import { StateStoreError } from './state-store-error.js';
import type { TableContext } from './table-context.js';

/** The spec column of the components table. */
export class UnitSpecs {
  private readonly s;

  constructor(ctx: TableContext) {
    const p = (sql: string) => ctx.db.prepare(sql);
    this.s = {
      setSpec: p('UPDATE components SET spec = ? WHERE name = ?'),
      specs: p('SELECT name, spec FROM components WHERE spec IS NOT NULL ORDER BY position, name'),
    };
  }

  recordSpec(name: string, spec: DesiredComponent): void {
    // Not part of the cached record: a spec is only read when an apply begins.
    if (this.s.setSpec.run(JSON.stringify(spec), name).changes === 0)
      throw new StateStoreError('KS_STATE_NOT_FOUND', `no component ${JSON.stringify(name)}`);
  }

  specs(): DesiredComponent[] {
    return (this.s.specs.all() as Array<{ name: string; spec: string }>).flatMap((r) => {
      try {
        const spec = JSON.parse(r.spec) as DesiredComponent;
        return spec && spec.name === r.name && spec.recipe?.lifecycle?.run ? [spec] : [];
      } catch {
        return [];
      }
    });
  }
}
