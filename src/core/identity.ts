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
}

type HashFn = (input: IdentityInput) => string;

/**
 * Every hash version ever shipped stays here, so an agent upgrade compares a running component with
 * the version it was hashed with instead of restarting the whole device (kubelet learned this the hard way).
 */
const HASHERS: Record<number, HashFn> = {
  1: ({ recipe, entry }) => {
    const { recipe: _path, ...planEntry } = entry;
    const { description: _d, ...metadata } = recipe.metadata;
    return sha256(canonicalJson({ metadata, artifacts: recipe.artifacts, lifecycle: recipe.lifecycle, planEntry }));
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
  // The native serialiser with a key-sorting replacer: several times faster than recursing by hand.
  return JSON.stringify(value, sortKeys) ?? 'null';
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
