// The read cache of the component records, apart from sqlite-state-store.ts, which drops it before each of its writes
// to the components table (and when a transaction rolls back); here is what it holds and when a read refreshes it.
import type Sqlite from 'better-sqlite3';
import { deepFreeze } from './deep-freeze.js';
import type { ComponentRecord, ComponentRecords } from './component-records.js';
import { StateStoreError } from './state-store-error.js';

export class ComponentCache {
  private readonly dataVersion;
  /**
   * The component rows as last read, until this store writes one. Reads outnumber writes by far (every API call,
   * every health tick) and reading 50 rows back through their checks cost most of the agent's CPU under load. Our own
   * writes drop it; another connection's commit (a second store, an operator's sqlite3 shell) changes SQLite's
   * data_version, which is checked on every read (microseconds).
   */
  private cache?: {
    list: readonly ComponentRecord[];
    byName: ReadonlyMap<string, ComponentRecord>;
    dataVersion: number;
  };

  constructor(
    db: Sqlite.Database,
    private readonly records: ComponentRecords,
  ) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
  }

  drop(): void {
    this.cache = undefined;
  }

  cached(): { list: readonly ComponentRecord[]; byName: ReadonlyMap<string, ComponentRecord> } {
    const dataVersion = this.dataVersion.get() as number;
    if (this.cache?.dataVersion !== dataVersion) {
      this.cache = undefined;
      // Frozen: a caller that changed a shared record in place would change every later reader's view.
      const list = this.records.all().map((c) => deepFreeze(c));
      this.cache = { list, byName: new Map(list.map((c) => [c.name, c])), dataVersion };
    }
    return this.cache;
  }

  component(name: string): ComponentRecord | undefined {
    try {
      return this.cached().byName.get(name);
    } catch (e) {
      if (!(e instanceof StateStoreError) || e.code !== 'KS_STATE_CORRUPT') throw e;
      // Another row is unreadable: this one may still be fine, and the agent can go on with it.
      return this.records.get(name);
    }
  }
}
