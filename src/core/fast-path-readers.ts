// The readers the fast paths of recipe-fast-path.ts are built of: each takes one TOML value exactly as the schema
// would, or gives up (fail) on anything it is not sure of. Apart from the recipe's and the plan's shapes, which they
// know nothing of.
import { durationInRange } from './schema-rules.js';

export type Raw = Record<string, unknown>;

/** Thrown inside the fast path to give up; never escapes it. */
const GIVE_UP = Symbol('give up');
export function fail(): never {
  throw GIVE_UP;
}

/** Runs a fast path; undefined when it gave up (or when anything unexpected threw). */
export function attempt<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/** A TOML table as smol-toml builds it (or a plain object): anything else is left to the schema. */
export function table(v: unknown): Raw {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail();
  const proto = Object.getPrototypeOf(v);
  if (proto !== null && proto !== Object.prototype) fail();
  return v as Raw;
}

/** The table's keys, all of them among `allowed` (a strict object). */
export function keysWithin(t: Raw, allowed: ReadonlySet<string>): void {
  for (const k of Object.keys(t)) if (!allowed.has(k)) fail();
}

export function str(v: unknown): string {
  if (typeof v !== 'string') fail();
  return v;
}
export function nonEmpty(v: unknown): string {
  const s = str(v);
  if (s.length === 0) fail();
  return s;
}
export function bool(v: unknown): boolean {
  if (typeof v !== 'boolean') fail();
  return v;
}
function finite(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) fail();
  return v;
}
export function intAtLeast(v: unknown, min: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail();
  return v;
}
export function oneOf<T extends string>(v: unknown, values: readonly T[]): T {
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) fail();
  return v as T;
}
export function array<T>(v: unknown, item: (x: unknown) => T): T[] {
  if (!Array.isArray(v)) fail();
  const out = new Array<T>(v.length);
  for (let i = 0; i < v.length; i++) {
    if (!(i in v)) fail();
    out[i] = item(v[i]);
  }
  return out;
}
/** A record: a new object with the same keys in the same order. Odd keys are left to the schema. */
export function record<T>(v: unknown, value: (x: unknown, depth: number) => T, depth = 0): Record<string, T> {
  const t = table(v);
  const out: Record<string, T> = {};
  for (const k of Object.keys(t)) {
    if (k === '__proto__') fail();
    out[k] = value(t[k], depth);
  }
  return out;
}
export function duration(v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  const ms = durationInRange(str(v));
  if (ms === undefined) fail();
  return ms;
}

/** A configuration value: a scalar or a table of them, as deep as the schema would go (a hostile depth is left to it). */
export function configValue(v: unknown, depth: number): unknown {
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return finite(v);
  if (depth > 32) fail();
  return record(v, configValue, depth + 1);
}
export const scalar = (v: unknown): string | number | boolean =>
  typeof v === 'number' ? finite(v) : typeof v === 'string' || typeof v === 'boolean' ? v : fail();
