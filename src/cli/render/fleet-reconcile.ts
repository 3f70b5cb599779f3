// `apply-dry --fleet` for people: one reconcile per fleet target, in fleet-file order, then the targets a merge
// removes. The per-plan renderers draw each section, so a target reads exactly like `apply-dry PLAN`.
import type { Reconcile } from '../../core/diff.js';
import { FLEET_FILE } from '../../core/fleet.js';
import { changeSummary, code, reconcileBodyMarkdown, signatureLine } from './reconcile-markdown.js';
import { actionOf, componentsInOrder, renderReconcileText } from './reconcile-text.js';

export interface FleetTargetDry {
  name: string;
  plan: string;
  /** The target's plan at the base, when the base names another one. */
  planBefore?: string;
  /** Compared with --base, and the base's fleet.toml has no target of this name. */
  isNew: boolean;
  /** The base's target of another name that takes the same devices (same selector and devices): a rename. */
  renamedFrom?: string;
  result: Reconcile;
}

export interface FleetDry {
  targets: FleetTargetDry[];
  /** Targets of the base's fleet.toml the head no longer has. */
  removed: Array<{ name: string; plan: string }>;
}

export const REMOVED_NOTE =
  'its devices go to the first other target that matches them, or keep running what they have if none does';

const changes = (r: Reconcile) => componentsInOrder(r).some((n) => actionOf(r, n) !== 'keep');

function targetNote(t: FleetTargetDry): string {
  if (t.renamedFrom !== undefined)
    return `renamed from ${t.renamedFrom}: the same devices, compared with its plan at the base`;
  if (t.isNew) return 'new target: compared with the empty state';
  return t.planBefore ? `plan was ${t.planBefore} at the base` : '';
}

/** `header`: what the whole run was compared with, and the signature verdict (the first lines of the output). */
export function renderFleetDryText(dry: FleetDry, header: string): string {
  const sections = dry.targets.map((t) => {
    const note = targetNote(t);
    return renderReconcileText(t.result, `target ${t.name} — ${t.plan}${note ? ` (${note})` : ''}`);
  });
  const removed = dry.removed.map((t) => `removed: target ${t.name} (${t.plan}): ${REMOVED_NOTE}\n`);
  return [header + '\n', ...sections, ...(removed.length ? [removed.join('')] : [])].join('\n');
}

/** The pull-request comment: a summary line, then one `### target …` section per target and the removed ones. */
export function renderFleetDryMarkdown(dry: FleetDry, comparedWith: string, signature: string): string {
  const changed = dry.targets.filter((t) => changes(t.result)).length;
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const summary = [
    `${changed === 0 ? 'No target changes' : `${changed} of ${count(dry.targets.length, 'target')} change`}`,
    ...(dry.removed.length ? [`${count(dry.removed.length, 'target')} removed`] : []),
  ].join('; ');
  const out = [
    `## Keystone dry run: ${code(FLEET_FILE)} (${count(dry.targets.length, 'target')})`,
    '',
    `Compared with ${comparedWith}. ${summary}.`,
    '',
    signatureLine(signature),
  ];
  for (const t of dry.targets) {
    const note = targetNote(t);
    out.push(
      '',
      `### target ${t.name} — ${t.plan}`,
      '',
      `${note ? `${note[0]!.toUpperCase()}${note.slice(1)}. ` : ''}${changeSummary(t.result)}`,
      '',
      ...reconcileBodyMarkdown(t.result),
    );
  }
  if (dry.removed.length) {
    out.push('', '### removed targets', '');
    for (const t of dry.removed) out.push(`- ${code(t.name)} (${code(t.plan)}): removed: ${REMOVED_NOTE}.`);
  }
  return out.join('\n') + '\n';
}
