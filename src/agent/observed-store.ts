// The store with its supervision writes reported as events: the writers stay unaware of who watches.
import type { StateStore } from '../store/state-store.js';
import type { Emit } from './agent-events.js';

/**
 * `onRunning` is told whenever a component is recorded healthy (outcomes.ts looks for a recovery then). `scrub` cleans a
 * reason of secret values before it is kept or told (a `cmd:` check's output may quote its environment).
 */
export function observedStore(
  store: StateStore,
  emit: Emit,
  onRunning: () => void,
  scrub: (text: string) => string = (t) => t,
): StateStore {
  const hooks: Partial<StateStore> = {
    recordState(name, state, given) {
      const reason = given === undefined ? undefined : scrub(given);
      store.recordState(name, state, reason);
      emit('state', { component: name, state, ...(reason !== undefined && { reason }) });
      if (state === 'running') onRunning();
    },
    recordStart(name, instance, startedAt) {
      store.recordStart(name, instance, startedAt);
      emit('started', { component: name, instance });
      emit('state', { component: name, state: 'starting' });
    },
    recordRestart(name) {
      const restarts = store.recordRestart(name);
      emit('restart', { component: name, restarts });
      return restarts;
    },
  };
  // Everything else goes to the store itself, bound to it (its methods use private fields through `this`).
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, key) {
      if (Object.hasOwn(hooks, key)) return hooks[key as keyof StateStore];
      const v: unknown = Reflect.get(target, key, target);
      if (typeof v !== 'function') return v;
      if (!bound.has(key)) bound.set(key, (v as (...a: unknown[]) => unknown).bind(target));
      return bound.get(key);
    },
  });
}
