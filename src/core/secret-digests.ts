// The secrets a desired state reads, and the state once the device knows their values' keyed digests (SPEC §16). Pure:
// the digests are computed at the edge (secrets/open-secrets.ts) from values that never enter the desired state.
import type { DesiredState } from './desired-state-types.js';
import { componentHash } from './identity.js';

/** Every secret some component of `state` reads, sorted. */
export function secretsRead(state: DesiredState): string[] {
  const names = new Set<string>();
  for (const c of state.components) for (const n of c.secrets ?? []) names.add(n);
  return [...names].sort();
}

/**
 * `state` with each component that reads secrets given their digests, and its hash computed with them: a new value
 * gives a new hash (the component restarts), the same value encrypted anew gives the same one (nothing restarts).
 * Components that read none are the very same objects.
 */
export function withSecretDigests(state: DesiredState, digests: ReadonlyMap<string, string>): DesiredState {
  let changed = false;
  const components = state.components.map((c) => {
    if (!c.secrets?.length) return c;
    const secretDigests: Record<string, string> = {};
    for (const n of c.secrets) {
      const d = digests.get(n);
      if (d === undefined) throw new Error(`no digest for secret ${n} of ${c.name}`);
      secretDigests[n] = d;
    }
    changed = true;
    return { ...c, secretDigests, hash: componentHash({ recipe: c.recipe, entry: c.entry, secretDigests }) };
  });
  return changed ? { ...state, components } : state;
}
