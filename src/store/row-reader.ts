// What every table module of the store shares: values are checked on their way in (KS_STATE_INVALID) and rows
// decoded on their way back out (KS_STATE_CORRUPT naming the file, the table row and the column).
import * as v from 'valibot';
import { describeIssues, int, minLength, number, safeParse } from '../core/valid.js';
import { StateStoreError } from './state-store-error.js';

export type Row = Record<string, unknown>;

/** ms since the epoch. */
export const timeSchema = v.pipe(number(), int(), v.minValue(0));
export const textSchema = v.pipe(v.string(), minLength(1));

/** Validates a value before it is written: KS_STATE_INVALID naming `what` and the offending field. */
export function checked<T>(schema: v.GenericSchema<unknown, T>, value: unknown, what: string): T {
  const r = safeParse(schema, value);
  if (!r.success) throw new StateStoreError('KS_STATE_INVALID', `${what}: ${describeIssues(r.issues)}`);
  return r.data;
}

export function orNull<T>(v: T | undefined): T | null {
  return v === undefined ? null : v;
}

/** Drops undefined members so read-back records have exactly the keys that were set. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** 0/1 to a boolean; anything else passes through for the schema to reject. */
export function bool(v: unknown): unknown {
  return v === 0 ? false : v === 1 ? true : v;
}

/** Turns rows into records, or throws KS_STATE_CORRUPT naming the file, the table row and the column. */
export class RowReader {
  constructor(private readonly file: string) {}

  corrupt(what: string, detail: string): StateStoreError {
    return new StateStoreError('KS_STATE_CORRUPT', `${this.file}: ${what} is corrupt: ${detail}`);
  }

  json(row: Row, column: string, what: string): unknown {
    const v = row[column];
    if (v === null || v === undefined) return undefined;
    if (typeof v !== 'string') throw this.corrupt(what, `${column}: expected JSON text, found ${typeof v}`);
    try {
      return JSON.parse(v) as unknown;
    } catch (e) {
      throw this.corrupt(what, `${column}: not valid JSON (${(e as Error).message})`);
    }
  }

  decode<T extends object>(schema: v.GenericSchema<unknown, T>, what: string, value: object): T {
    const r = safeParse(schema, defined(value));
    if (!r.success) throw this.corrupt(what, describeIssues(r.issues));
    return defined(r.data);
  }
}
