// The fleet file of SPEC §13: `fleet.toml` at the repository root maps devices to plans, so the shape of a fleet
// lives in Git, signed like every recipe and plan. Pure: parsing, what the file alone can tell, and which target a
// device (its name and its own labels) falls in. Reading the plans each target names is load-fleet.ts's job.
import { posix } from 'node:path';
import * as v from 'valibot';
import { minLength, record, strictObject } from './valid.js';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import type { Labels } from './labels.js';
import { deviceNameField, labelSelector } from './label-schemas.js';
import { configTable, escapesRepository } from './recipe.js';
import { componentName } from './schema-rules.js';
import { parseTomlDocument, type ParsedDocument } from './toml-document.js';
import { checkRollout, rolloutSchema } from './rollout.js';
import { agentSectionSchema, checkAgentSection } from './agent-section.js';
import { windowSchema } from './window-schema.js';

export const FLEET_FILE = 'fleet.toml';

const deviceName = deviceNameField;
const selector = labelSelector;

const target = strictObject({
  // Named in reports and the fleet view, so kept as plain as a component name.
  name: componentName,
  // Every label must match; {} matches every device. Absent: only `devices` match.
  selector: v.optional(selector),
  // These devices match too, whatever their labels.
  devices: v.optional(v.array(deviceName)),
  plan: v.pipe(v.string(), minLength(1)),
  // Per-component configuration overrides, laid over the plan's (SPEC §12): { api = { http = { port = 9090 } } }.
  config: v.optional(record(v.string(), configTable)),
  // This target's agent version (SPEC §17), instead of the fleet's [agent].
  agent: v.optional(agentSectionSchema),
  // When its devices apply a new revision (SPEC §19): { days = ["mon"], from = "02:00", to = "04:00", timezone = "…" }.
  window: v.optional(windowSchema),
});

export const fleetSchema = strictObject({
  targets: v.optional(v.array(target), []),
  // Staged rollouts (SPEC §14); absent: every device applies each commit at once.
  rollout: v.optional(rolloutSchema),
  // The agent version the fleet runs (SPEC §17); absent: devices keep the agent they have.
  agent: v.optional(agentSectionSchema),
});

export type Fleet = v.InferOutput<typeof fleetSchema>;
export type FleetTarget = Fleet['targets'][number];

export interface ParsedFleet {
  file: string;
  fleet?: Fleet;
  diagnostics: Diagnostic[];
  /** Locates later diagnostics (a target's plan that does not validate) in this file. */
  doc: ParsedDocument<Fleet>;
}

/** Parses a fleet file and checks what it alone can tell: target names, match rules, plan paths. */
export function parseFleet(file: string, text: string): ParsedFleet {
  const doc = parseTomlDocument(file, text, fleetSchema);
  const diagnostics = [...doc.diagnostics];
  const raw = doc.raw as { targets?: unknown; rollout?: unknown; agent?: unknown } | undefined;
  if (raw) diagnostics.push(...checkRollout(raw.rollout, doc), ...checkAgentSection(raw.agent, ['agent'], doc));
  if (raw && Array.isArray(raw.targets)) {
    const firstIndex = new Map<string, number>();
    raw.targets.forEach((t: unknown, i) => {
      if (typeof t !== 'object' || t === null) return;
      const { name, plan, selector: sel, devices, agent } = t as Record<string, unknown>;
      diagnostics.push(...checkAgentSection(agent, ['targets', i, 'agent'], doc));
      if (typeof name === 'string') {
        const first = firstIndex.get(name);
        if (first === undefined) firstIndex.set(name, i);
        else {
          const firstLine = doc.diagnostic(CODES.FLEET_DUPLICATE_TARGET, ['targets', first, 'name'], '').line;
          diagnostics.push(
            doc.diagnostic(
              CODES.FLEET_DUPLICATE_TARGET,
              ['targets', i, 'name'],
              `target "${name}" is declared twice`,
              `first declared at targets[${first}]${firstLine ? ` (line ${firstLine})` : ''}: target names are unique`,
            ),
          );
        }
      }
      if (sel === undefined && devices === undefined)
        diagnostics.push(
          doc.diagnostic(
            CODES.FLEET_TARGET_EMPTY,
            ['targets', i],
            `target ${typeof name === 'string' ? `"${name}"` : `targets[${i}]`} matches no device`,
            'give it a selector (selector = {} matches every device) or a devices list',
          ),
        );
      if (typeof plan === 'string' && escapesRepository(plan))
        diagnostics.push(
          doc.diagnostic(
            CODES.PATH_ESCAPE,
            ['targets', i, 'plan'],
            `"${plan}" points outside the repository`,
            'plan paths are relative to the repository root',
          ),
        );
      // Only plans/**.toml is signed (SHA256SUMS): a plan elsewhere would pass `sign` and `verify`, then be refused
      // by every device as unsigned. Said here, where the operator looks.
      else if (typeof plan === 'string' && !/^plans\/[^\p{Cc}]+\.toml$/u.test(posix.normalize(plan)))
        diagnostics.push(
          doc.diagnostic(
            CODES.FLEET_PLAN_PATH,
            ['targets', i, 'plan'],
            `${JSON.stringify(plan)} is not a plan under plans/`,
            'a target names a .toml file under plans/, as the signed set holds',
          ),
        );
    });
  }
  return {
    file,
    ...(diagnostics.length === 0 && { fleet: doc.value! }),
    diagnostics: sortDiagnostics(diagnostics),
    doc,
  };
}

/** The normalised repository path of a target's plan. */
export function targetPlanPath(t: FleetTarget): string {
  return posix.normalize(t.plan);
}

/** Whether a target takes this device: named in `devices`, or every selector label equal to the device's. */
export function targetMatches(t: FleetTarget, device: string, labels: Labels): boolean {
  if (t.devices?.includes(device)) return true;
  if (!t.selector) return false;
  return Object.entries(t.selector).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

/** The first target, in file order, that takes this device. */
export function selectTarget(
  fleet: Fleet,
  device: string,
  labels: Labels,
): { target: FleetTarget; index: number } | undefined {
  const index = fleet.targets.findIndex((t) => targetMatches(t, device, labels));
  return index < 0 ? undefined : { target: fleet.targets[index]!, index };
}
