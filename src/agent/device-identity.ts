// What a device's plan choice depends on besides the revision: its name, its labels and --plan. Recorded with each
// applied revision, so that an agent restarted with other labels (moved to another target by its operator) looks at
// the Git source at once instead of waiting for its place in the poll interval (SPEC §13).
import type { Labels } from '../core/labels.js';

/** A stable text for comparison: the labels sorted, --plan or null. */
export function deviceIdentity(
  fleet: { device: string; labels: Labels } | undefined,
  planFile: string | undefined,
): string {
  const labels = Object.keys(fleet?.labels ?? {})
    .sort()
    .map((k) => [k, fleet!.labels[k]!]);
  return JSON.stringify({ device: fleet?.device ?? null, labels, plan: planFile ?? null });
}
