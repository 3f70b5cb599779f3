// The values a component was given, for scrubbing what is published about it (status/scrub-values.ts): its resolved
// configuration and binds (`{{config.…}}`, `{{deps.….exports.…}}`, recorded as the unit's inputs) and the
// environment its recipe sets. Secrets, when a component can be given some, join this list.
import type { DesiredComponent } from '../core/desired-state.js';
import { scrubValues, type GivenValue } from '../secrets/scrub-values.js';

/** `config.http.port` → `[config:http.port]`; `deps.db.exports.url` → `[deps:db.exports.url]`. */
function inputLabel(key: string): string {
  const dot = key.indexOf('.');
  return dot < 0 ? `[${key}]` : `[${key.slice(0, dot)}:${key.slice(dot + 1)}]`;
}

/** Configuration and binds first: a value that is also an environment variable's is named by its configuration key. */
export function givenValues(c: DesiredComponent): GivenValue[] {
  const run = c.recipe.lifecycle.run;
  return [
    ...Object.entries(c.inputs ?? {}).map(([key, value]) => ({ label: inputLabel(key), value })),
    ...Object.entries({ ...run.exec?.env, ...run.container?.env }).map(([key, value]) => ({
      label: `[env:${key}]`,
      value,
    })),
  ];
}

/**
 * What the commit status may say of each failure: its reason without the values that component was given. A name the
 * desired state does not have (none should reach here) is scrubbed of every component's values.
 */
export function publishedFailures(
  failures: ReadonlyArray<{ name: string; reason: string }>,
  components: readonly DesiredComponent[],
): Array<{ name: string; reason: string }> {
  const byName = new Map(components.map((c) => [c.name, c]));
  let everyone: GivenValue[] | undefined;
  return failures.map((f) => {
    const c = byName.get(f.name);
    // A composite's own name stands for its members.
    const members = c ? [c] : components.filter((m) => m.group === f.name);
    const given = members.length ? members.flatMap(givenValues) : (everyone ??= components.flatMap(givenValues));
    return { name: f.name, reason: scrubValues(f.reason, given) };
  });
}
