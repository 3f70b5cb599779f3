// Freezing a record all the way down: the component cache of sqlite-state-store.ts hands one object to every reader.
// A pure helper with nothing of SQLite in it, so it stands apart from the store.

/** Freezes a record and the arrays and objects inside it. */
export function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const inner of Object.values(v)) deepFreeze(inner);
  }
  return v;
}
