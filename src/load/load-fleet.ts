// The load phase of a fleet (SPEC §13): read fleet.toml, check every target's plan (a fleet file naming a plan that
// does not exist or does not validate rejects the whole revision, on every device alike, so the fleet never splits
// over one bad target), then resolve the plan of the target this device falls in.
import type { Diagnostic } from '../core/errors.js';
import { CODES, formatDiagnostic, sortDiagnostics } from '../core/errors.js';
import {
  FLEET_FILE,
  parseFleet,
  selectTarget,
  targetPlanPath,
  type FleetTarget,
  type ParsedFleet,
} from '../core/fleet.js';
import { formatLabels, type Labels } from '../core/labels.js';
import { rolloutOf, waveOf, type Rollout } from '../core/rollout.js';
import { agentSectionFor, type AgentSection } from '../core/agent-section.js';
import type { MaintenanceWindow } from '../core/maintenance-window.js';
import type { DesiredState, Resolution } from '../core/desired-state.js';
import { loadRevision } from './load-revision.js';
import { MAX_DOCUMENT_BYTES, type RepoReader } from '../source/repo-reader.js';

export interface ResolvedTarget {
  target: FleetTarget;
  index: number;
  planFile: string;
  state: DesiredState;
}

export type LoadedFleet =
  { ok: true; fleet: ParsedFleet; targets: ResolvedTarget[] } | { ok: false; diagnostics: Diagnostic[] };

/** What a device runs from a revision: its target's resolved plan, or why there is none. */
export type DeviceResolution =
  | {
      ok: true;
      state: DesiredState;
      planFile: string;
      target?: string;
      rollout?: Rollout;
      wave?: { index: number; name: string };
      agent?: AgentSection;
      window?: MaintenanceWindow;
    }
  | { ok: false; diagnostics: Diagnostic[]; noTarget?: undefined }
  /** The revision is valid, but no target takes this device: it keeps what runs. */
  | { ok: false; diagnostics: Diagnostic[]; noTarget: { device: string; labels: Labels } };

const READ_FAILURES: ReadonlySet<string> = new Set([CODES.FILE_NOT_FOUND, CODES.NOT_A_FILE, CODES.FILE_TOO_LARGE]);
const decoder = new TextDecoder('utf-8', { fatal: true });

/** fleet.toml and every target's plan, resolved with the target's config; every problem of the revision at once. */
export async function loadFleet(reader: RepoReader): Promise<LoadedFleet> {
  const read = await reader.readFile(FLEET_FILE, MAX_DOCUMENT_BYTES);
  if (!read.ok) {
    const missing = read.code === CODES.FILE_NOT_FOUND;
    return {
      ok: false,
      diagnostics: [
        {
          code: missing ? CODES.FLEET_MISSING : read.code,
          message: missing ? 'no fleet.toml at the root of the repository, and no --plan was given' : read.message,
          file: FLEET_FILE,
          path: '',
          ...(missing && { hint: 'add fleet.toml with [[targets]] (SPEC §13), or run the agent with --plan PLAN' }),
        },
      ],
    };
  }
  let text: string;
  try {
    text = decoder.decode(read.bytes);
  } catch {
    return {
      ok: false,
      diagnostics: [
        { code: CODES.TOML_SYNTAX, message: 'not valid UTF-8 (TOML files are UTF-8)', file: FLEET_FILE, path: '' },
      ],
    };
  }
  const fleet = parseFleet(FLEET_FILE, text);
  if (!fleet.fleet) return { ok: false, diagnostics: fleet.diagnostics };

  const diagnostics: Diagnostic[] = [];
  const targets: ResolvedTarget[] = [];
  // Targets one after the other: each resolution reads its recipes with bounded concurrency already.
  for (const [index, target] of fleet.fleet.targets.entries()) {
    const planFile = targetPlanPath(target);
    const resolution = await loadRevision(
      reader,
      planFile,
      target.config && { file: FLEET_FILE, doc: fleet.doc, path: ['targets', index, 'config'], config: target.config },
    );
    if (resolution.ok) {
      targets.push({ target, index, planFile, state: resolution.state });
      continue;
    }
    diagnostics.push(...blameTarget(fleet, index, planFile, resolution));
  }
  return diagnostics.length ? { ok: false, diagnostics: dedupe(diagnostics) } : { ok: true, fleet, targets };
}

/**
 * What a revision gives this device to run: the plan it was told (`--plan`, a manual apply), else the plan of its
 * fleet.toml target. `planFile` says which plan it was, also when it does not resolve.
 */
export async function loadDeviceRevision(
  reader: RepoReader,
  choice: { plan?: string; device: string; labels: Labels },
): Promise<DeviceResolution & { planFile?: string }> {
  if (choice.plan === undefined) return loadForDevice(reader, choice.device, choice.labels);
  const r = await loadRevision(reader, choice.plan);
  return r.ok ? { ok: true, state: r.state, planFile: choice.plan } : { ...r, planFile: choice.plan };
}

/** The plan of the first target that takes this device (SPEC §13), after checking the whole fleet file. */
export async function loadForDevice(reader: RepoReader, device: string, labels: Labels): Promise<DeviceResolution> {
  const loaded = await loadFleet(reader);
  if (!loaded.ok) return loaded;
  const chosen = selectTarget(loaded.fleet.fleet!, device, labels);
  if (!chosen) {
    const names = loaded.fleet.fleet!.targets.map((t) => t.name);
    return {
      ok: false,
      noTarget: { device, labels },
      diagnostics: [
        {
          code: CODES.FLEET_NO_TARGET,
          message: `no target in fleet.toml matches device ${device} (${formatLabels(labels)})`,
          file: FLEET_FILE,
          path: 'targets',
          hint: names.length
            ? `targets: ${names.join(', ')}; give the device labels a selector matches, or name it in a target's devices`
            : 'fleet.toml has no targets',
        },
      ],
    };
  }
  const t = loaded.targets.find((r) => r.index === chosen.index)!;
  const section = loaded.fleet.fleet!.rollout;
  // The agent version this device's target runs (SPEC §17), staged with the rest of the commit.
  const agentSection = agentSectionFor(loaded.fleet.fleet!, t.target);
  // The target's maintenance window (SPEC §19) goes with it: when this device applies the commit.
  const agent = { ...(agentSection && { agent: agentSection }), ...(t.target.window && { window: t.target.window }) };
  if (!section) return { ok: true, state: t.state, planFile: t.planFile, target: t.target.name, ...agent };
  // Staged (SPEC §14): the device's wave in this commit's fleet.toml, by its name and labels.
  const rollout = rolloutOf(section);
  const w = waveOf(rollout, device, labels);
  return {
    ok: true,
    state: t.state,
    planFile: t.planFile,
    target: t.target.name,
    rollout,
    wave: { index: w.index, name: w.wave.name },
    ...agent,
  };
}

/** A target's plan that does not resolve: a missing plan is named at the target; an invalid one at both places. */
function blameTarget(
  fleet: ParsedFleet,
  index: number,
  planFile: string,
  resolution: Extract<Resolution, { ok: false }>,
): Diagnostic[] {
  const name = fleet.fleet!.targets[index]!.name;
  const unread = resolution.diagnostics.find((d) => d.file === planFile && d.path === '' && READ_FAILURES.has(d.code));
  if (unread)
    return [
      fleet.doc.diagnostic(
        unread.code,
        ['targets', index, 'plan'],
        `target "${name}": plan ${planFile}: ${unread.message}`,
      ),
    ];
  // Only the target's own config is wrong (located in fleet.toml already): the plan itself is fine, say no more.
  if (resolution.diagnostics.every((d) => d.file === FLEET_FILE)) return resolution.diagnostics;
  const first = resolution.diagnostics[0]!;
  return [
    fleet.doc.diagnostic(
      CODES.FLEET_PLAN_INVALID,
      ['targets', index, 'plan'],
      `target "${name}": plan ${planFile} does not validate (${resolution.diagnostics.length} error(s))`,
      `first: ${formatDiagnostic(first)}`,
    ),
    // The fleet file's own overlay problems are already located in fleet.toml; the rest are the plan's and recipes'.
    ...resolution.diagnostics,
  ];
}

function dedupe(diags: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return sortDiagnostics(
    diags.filter((d) => {
      const k = `${d.file}\0${d.line ?? ''}\0${d.path}\0${d.code}\0${d.message}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    }),
  );
}
