// The component hash: a versioned digest of everything that affects how a component runs.
import { createHash } from 'node:crypto';
import type { Recipe } from './recipe.js';
import type { PlanEntry } from './plan.js';

/**
 * The inputs of the hash. Dependencies and the description are left out on purpose: they order
 * starts and document, but do not change the running program, so editing them restarts nothing.
 * The recipe's path is left out too: moving a recipe file is not a change to what runs.
 */
export interface IdentityInput {
  recipe: Recipe;
  entry: PlanEntry;
  /** Keyed digests of the secrets it reads (never values): absent for a component that reads none, whose hash is unchanged. */
  secretDigests?: Record<string, string>;
}

type HashFn = (input: IdentityInput) => string;

/**
 * Every hash version ever shipped stays here, so an agent upgrade compares a running component with
 * the version it was hashed with instead of restarting the whole device (kubelet learned this the hard way).
 */
const HASHERS: Record<number, HashFn> = {
  1: ({ recipe, entry, secretDigests }) => {
    const { recipe: _path, ...planEntry } = entry;
    const { description: _d, ...metadata } = recipe.metadata;
    const secrets = secretDigests && Object.keys(secretDigests).length ? { secrets: secretDigests } : {};
    return sha256(
      canonicalJson({ metadata, artifacts: recipe.artifacts, lifecycle: recipe.lifecycle, planEntry, ...secrets }),
    );
  },
};

export const CURRENT_HASH_VERSION = 1;

/** `v1:<sha256 hex>` of the component at the given hash version. */
export function componentHash(input: IdentityInput, version = CURRENT_HASH_VERSION): string {
  const fn = HASHERS[version];
  if (!fn) throw new Error(`unknown component hash version ${version}`);
  return `v${version}:${fn(input)}`;
}

/** The version a hash was computed with, or NaN for something that is not a component hash. */
export function hashVersion(hash: string): number {
  const m = /^v(\d+):/.exec(hash);
  return m ? Number(m[1]) : NaN;
}

/** True when the running instance's hash, of whatever known version, matches the desired component. */
export function sameIdentity(input: IdentityInput, runningHash: string): boolean {
  const version = hashVersion(runningHash);
  return HASHERS[version] !== undefined && componentHash(input, version) === runningHash;
}

/** JSON with object keys sorted at every level, so the digest does not depend on key order. */
export function canonicalJson(value: unknown): string {
  // The native serialiser on a copy whose tables have their keys sorted (only those that are not sorted already
  // are copied): the same text as the key-sorting replacer below, without a call back into JS for every value.
  const sorted = sortedDeep(value, 0);
  if (sorted === UNSUPPORTED) return canonicalJsonByReplacer(value);
  return JSON.stringify(sorted) ?? 'null';
}

/** The reference: the native serialiser with a key-sorting replacer. Kept for values the walk leaves to it (and for tests). */
export function canonicalJsonByReplacer(value: unknown): string {
  return JSON.stringify(value, sortKeys) ?? 'null';
}

const UNSUPPORTED = Symbol('unsupported');

/**
 * `v` with every plain table's keys in sorted order, as sortKeys would give them to JSON.stringify: the same value
 * when nothing needs sorting. UNSUPPORTED for what the walk does not model (toJSON, class instances, boxed
 * primitives, very deep nesting), which the replacer then serialises.
 */
function sortedDeep(v: unknown, depth: number): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth > 64) return UNSUPPORTED;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      const s = sortedDeep(x, depth + 1);
      if (s === UNSUPPORTED) return UNSUPPORTED;
      if (s !== x) (out ??= v.slice())[i] = s;
    }
    return out ?? v;
  }
  const proto = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function')
    return UNSUPPORTED;
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj);
  let sorted = true;
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) sorted = false;
  let changed: Record<string, unknown> | undefined;
  for (const k of keys) {
    // Assigning "__proto__" to a new table would set its prototype: the replacer's own way with such a key is kept.
    if (k === '__proto__') return UNSUPPORTED;
    const x = obj[k];
    const s = sortedDeep(x, depth + 1);
    if (s === UNSUPPORTED) return UNSUPPORTED;
    if (s !== x) (changed ??= {})[k] = s;
  }
  if (sorted && !changed) return v;
  const out: Record<string, unknown> = {};
  for (const k of sorted ? keys : keys.sort()) out[k] = changed && Object.hasOwn(changed, k) ? changed[k] : obj[k];
  return out;
}

function sortKeys(_key: string, v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj);
  let sorted = true;
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) sorted = false;
  if (sorted) return v;
  const out: Record<string, unknown> = {};
  for (const k of keys.sort()) out[k] = obj[k];
  return out;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
