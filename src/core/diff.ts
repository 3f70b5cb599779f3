// The pure reconcile of SPEC §4: (desired, actual) → what to stop, what to start, what to leave alone, and why.
import type { DesiredComponent, DesiredState, DependencyType } from './desired-state.js';
import { CURRENT_HASH_VERSION, hashVersion, sameIdentity } from './identity.js';
import { MaxHeap } from './max-heap.js';

/** What runs now, as the agent recorded it (or as a base revision would have run it). */
export interface ActualComponent {
  name: string;
  /** The versioned component hash recorded when it was started. */
  hash: string;
  version: string;
  running: boolean;
  /** Crash-looping: stays stopped until a revision changes it or an operator restarts it (SPEC §5). */
  held?: boolean;
  /** The dependencies it was started with: removed components are stopped dependents-first by these. */
  dependencies: ReadonlyArray<{ component: string; type: DependencyType }>;
  /** The configuration and bound values it was started with, when its recipe has placeholders. */
  inputs?: Readonly<Record<string, string>>;
  /** The digests of the secrets it read (SPEC §16), when known: `secret NAME changed` is told by them, never a value. */
  secretDigests?: Readonly<Record<string, string>>;
}

export interface ActualState {
  /** In the start order they had. */
  components: ReadonlyArray<ActualComponent>;
}

export type Reason =
  | { kind: 'new' }
  | { kind: 'version'; from: string; to: string }
  | { kind: 'configuration'; changes?: string[] }
  | { kind: 'not-running' }
  | { kind: 'cascade'; dependency: string }
  | { kind: 'removed' }
  | { kind: 'held' }
  | { kind: 'unchanged' };

export interface Reconcile {
  stopOrder: string[];
  startOrder: string[];
  noTouch: string[];
  layers: string[][];
  /** One line per component, as SPEC §4 words it. */
  reasons: Record<string, string>;
  /** The same reasons as data, for code that must not parse text. */
  reasonCodes: Record<string, Reason>;
}

export const EMPTY_ACTUAL: ActualState = { components: [] };

export function reasonText(r: Reason): string {
  switch (r.kind) {
    case 'new':
      return 'new';
    case 'version':
      return `version ${r.from} → ${r.to}`;
    case 'configuration':
      return r.changes?.length ? `configuration changed: ${r.changes.join(', ')}` : 'configuration changed';
    case 'not-running':
      return 'not running';
    case 'cascade':
      return `hard dependency ${r.dependency} restarts`;
    case 'removed':
      return 'removed';
    case 'held':
      return 'held stopped (crash-looping, or by an operator) until changed or started';
    case 'unchanged':
      return 'unchanged';
  }
}

/** Why a desired component must (re)start on its own account, or undefined when it may keep running. */
function ownChange(c: DesiredComponent, a: ActualComponent | undefined): Reason | undefined {
  if (!a) return { kind: 'new' };
  // Same-version hashes compare directly; an older version is recomputed so an agent upgrade restarts nothing.
  if (a.hash !== c.hash && !(hashVersion(a.hash) !== CURRENT_HASH_VERSION && sameIdentity(c, a.hash))) {
    const to = c.recipe.metadata.version;
    if (a.version !== to) return { kind: 'version', from: a.version, to };
    const changes = [...inputChanges(a.inputs, c.inputs), ...secretChanges(a.secretDigests, c.secretDigests)];
    return changes.length ? { kind: 'configuration', changes } : { kind: 'configuration' };
  }
  if (a.held) return undefined;
  if (!a.running) return { kind: 'not-running' };
  return undefined;
}

/** `config.http.port 8080 → 9090` for each placeholder value that differs (one side may have none). */
function inputChanges(
  from: Readonly<Record<string, string>> | undefined,
  to: Readonly<Record<string, string>> | undefined,
): string[] {
  if (!from && !to) return [];
  const keys = [...new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})])].sort();
  const show = (v: string | undefined) => (v === undefined ? '(unused)' : v === '' ? '""' : v);
  return keys.filter((k) => from?.[k] !== to?.[k]).map((k) => `${k} ${show(from?.[k])} → ${show(to?.[k])}`);
}

/**
 * `secret db_password changed` for each secret whose digest differs; `ciphertext changed` where only the encrypted files
 * could be compared (a pull request's dry run cannot decrypt: its digests are the files', prefixed `ciphertext:`).
 */
function secretChanges(
  from: Readonly<Record<string, string>> | undefined,
  to: Readonly<Record<string, string>> | undefined,
): string[] {
  // The running side keeps no digests it could show (an agent's are keyed by the device): nothing to say then.
  if (!from || !to) return [];
  const keys = [...new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})])].sort();
  return keys.flatMap((k) => {
    const [a, b] = [from?.[k], to?.[k]];
    if (a === b) return [];
    if (a === undefined) return [`secret ${k} now read`];
    if (b === undefined) return [`secret ${k} no longer read`];
    // One side opened, the other not (a key this run cannot open): only the files can be said to differ.
    return [
      a.startsWith(CIPHERTEXT_DIGEST) || b.startsWith(CIPHERTEXT_DIGEST)
        ? `secret ${k} ciphertext changed`
        : `secret ${k} changed`,
    ];
  });
}

/** The prefix of a digest taken over a secret's encrypted file rather than its value. */
export const CIPHERTEXT_DIGEST = 'ciphertext:';

/**
 * Computes the reconcile. Invariants (property-tested): an unchanged state gives empty orders;
 * nothing is both stopped and untouched; starts respect every dependency; every transitive hard
 * dependent of a restart restarts; ordering edges never cascade; the result is deterministic.
 */
export function diff(desired: DesiredState, actual: ActualState): Reconcile {
  const actualByName = new Map(actual.components.map((a) => [a.name, a]));
  const desiredByName = new Map(desired.components.map((c) => [c.name, c]));
  const reasons = new Map<string, Reason>();

  // 1. Own changes.
  for (const c of desired.components) {
    const r = ownChange(c, actualByName.get(c.name));
    if (r) reasons.set(c.name, r);
  }

  // Groups (composites, replicas) with a unit that exists already.
  // Replica sets (`w/1`, `app/jobs/2`) with a slot that exists already: scaling up adds a slot beside running ones.
  const slotOf = (name: string) => /^(.+)\/\d+$/.exec(name)?.[1];
  const runningSets = new Set<string>();
  for (const a of actual.components) {
    const set = slotOf(a.name);
    if (set !== undefined && desiredByName.has(a.name)) runningSets.add(set);
  }

  // 2. Hard cascade, in start order so a cascade names the earliest restarting dependency.
  const hardDependents = new Map<string, string[]>();
  for (const name of desired.startOrder) {
    for (const d of desiredByName.get(name)!.dependencies) {
      if (d.type !== 'hard') continue;
      const list = hardDependents.get(d.component) ?? [];
      list.push(name);
      hardDependents.set(d.component, list);
    }
  }
  for (const name of desired.startOrder) {
    const own = reasons.get(name);
    if (!own) continue;
    // A new replica beside running ones (a scale-up) restarts nothing: its dependents lost nothing. A new member of a
    // composite may replace one that goes, so it cascades as any change does.
    const set = slotOf(name);
    if (own.kind === 'new' && desiredByName.get(name)!.group !== undefined && set !== undefined && runningSets.has(set))
      continue;
    for (const dependent of hardDependents.get(name) ?? []) {
      if (!reasons.has(dependent)) reasons.set(dependent, { kind: 'cascade', dependency: name });
    }
  }

  // 3. Orders. Starting = everything with a reason; stopping = what of it runs now, plus removals.
  const startOrder = desired.startOrder.filter((n) => reasons.has(n));
  const noTouch = desired.startOrder.filter((n) => !reasons.has(n));
  const stopSet = new Set<string>();
  for (const n of startOrder) if (actualByName.get(n)?.running) stopSet.add(n);
  for (const a of actual.components) {
    if (!desiredByName.has(a.name)) {
      reasons.set(a.name, { kind: 'removed' });
      if (a.running) stopSet.add(a.name);
    }
  }
  const reasonCodes: Record<string, Reason> = {};
  for (const n of desired.startOrder) {
    const a = actualByName.get(n);
    reasonCodes[n] = reasons.get(n) ?? (a?.held ? { kind: 'held' } : { kind: 'unchanged' });
  }
  for (const a of actual.components) if (!desiredByName.has(a.name)) reasonCodes[a.name] = { kind: 'removed' };

  const reasonTexts: Record<string, string> = {};
  for (const [n, r] of Object.entries(reasonCodes)) reasonTexts[n] = reasonText(r);
  return {
    stopOrder: stopOrder(stopSet, desired, actual),
    startOrder,
    noTouch,
    layers: desired.layers.map((l) => [...l]),
    reasons: reasonTexts,
    reasonCodes,
  };
}

/**
 * Dependents before their dependencies, by the edges that run now (the actual state's), and
 * otherwise the reverse of the desired start order; removed components go first among equals.
 * A topological order with a priority heap: O(n log n).
 */
function stopOrder(stopSet: Set<string>, desired: DesiredState, actual: ActualState): string[] {
  if (stopSet.size === 0) return [];
  const rank = new Map<string, number>();
  desired.startOrder.forEach((n, i) => rank.set(n, i));
  let next = desired.startOrder.length;
  for (const a of actual.components) if (!rank.has(a.name)) rank.set(a.name, next++);

  // Count, for each component to stop, how many of its running dependents are also being stopped.
  const remainingDependents = new Map<string, number>();
  const depsOf = new Map<string, string[]>();
  for (const n of stopSet) remainingDependents.set(n, 0);
  for (const a of actual.components) {
    if (!stopSet.has(a.name)) continue;
    const ds = [...new Set(a.dependencies.map((d) => d.component))].filter((d) => stopSet.has(d) && d !== a.name);
    depsOf.set(a.name, ds);
    for (const d of ds) remainingDependents.set(d, remainingDependents.get(d)! + 1);
  }
  const heap = new MaxHeap((n: string) => rank.get(n)!);
  for (const [n, count] of remainingDependents) if (count === 0) heap.push(n);
  const order: string[] = [];
  while (heap.size) {
    const n = heap.pop()!;
    order.push(n);
    for (const d of depsOf.get(n) ?? []) {
      const left = remainingDependents.get(d)! - 1;
      remainingDependents.set(d, left);
      if (left === 0) heap.push(d);
    }
  }
  // A cycle in recorded state cannot come from a valid revision; stop whatever is left by rank rather than hang.
  if (order.length < stopSet.size) {
    const rest = [...stopSet].filter((n) => !order.includes(n)).sort((a, b) => rank.get(b)! - rank.get(a)!);
    order.push(...rest);
  }
  return order;
}

/** The actual state a device would have if it ran `state` fully: the base side of `apply-dry --base`. */
export function actualFromDesired(state: DesiredState): ActualState {
  const byName = new Map(state.components.map((c) => [c.name, c]));
  return {
    components: state.startOrder.map((n) => {
      const c = byName.get(n)!;
      return {
        name: c.name,
        hash: c.hash,
        version: c.recipe.metadata.version,
        running: true,
        dependencies: c.dependencies,
        ...(c.inputs && { inputs: c.inputs }),
        ...(c.secretDigests && { secretDigests: c.secretDigests }),
      };
    }),
  };
}
