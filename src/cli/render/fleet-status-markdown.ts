// The fleet view for a pull-request comment or a CI job summary: a summary table, the rollout's waves when the
// commit has a `[rollout]`, then a table per target.
import type { RolloutView } from '../../fleet-view/fleet-rollout-view.js';
import type { FleetView } from '../../fleet-view/fleet-view.js';
import {
  agentVersionsText,
  BAKE_ESTIMATE_NOTE,
  bakeText,
  countColumns,
  deviceStateText,
  haltedText,
  rolloutSettingsText,
  short,
  sinceText,
  waveRule,
  waveStateText,
  type FleetStatusMeta,
} from './fleet-status-text.js';
import { utc } from './status-table.js';

// Whatever reaches a cell came from a ref, a note or fleet.toml, which anyone who can push may write: no control
// characters, no newline, no `|` that would end the cell (in code spans too).
const plain = (s: string) => s.replace(/\p{Cc}/gu, ' ').replace(/\|/g, '\\|');
const code = (s: string) => '`' + plain(s).replace(/`/g, "'") + '`';
const cell = (s: string) => plain(s);

function rolloutSection(r: RolloutView): string[] {
  const halted = haltedText(r);
  return [
    '',
    `#### Rollout of ${code(short(r.commit))}`,
    '',
    `${cell(rolloutSettingsText(r))}.${halted ? ` **${cell(halted)}**.` : ''}`,
    '',
    '| wave | rule | devices | applied | failed | applying | held | bake left | state |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.waves.map(
      (w) =>
        `| ${cell(w.name)} | ${cell(waveRule(w))} | ${w.devices} | ${w.success} | ${w.failed} | ${w.applying} | ${w.held} | ${bakeText(w)} | ${cell(waveStateText(w))} |`,
    ),
    ...(r.waves.some((w) => w.bakeLeftMs !== undefined) ? ['', `_${cell(BAKE_ESTIMATE_NOTE)}._`] : []),
    ...(r.notCounted?.length
      ? [
          '',
          ...r.notCounted.map(
            (n) =>
              `- not counted: ${code(n.device)} ${cell(n.state)} in ${cell(n.wave)} (**${cell(n.verdict)}**: ${cell(n.reason ?? '')})`,
          ),
        ]
      : []),
  ];
}

export function renderFleetStatusMarkdown(view: FleetView, meta: FleetStatusMeta, rollout?: RolloutView): string {
  const agents = agentVersionsText(view);
  const out = [
    `### Keystone fleet status: ${code(short(view.commit))} (${code(meta.label)})`,
    '',
    `${view.devices.length} device${view.devices.length === 1 ? '' : 's'}${view.fleetFile ? '' : ', no `fleet.toml` at this commit'}. Silent: no report within ${cell(meta.silentAfter)} of ${sinceText(view)}${view.silenceCounts ? '' : ' (not yet)'}.`,
    ...(agents ? ['', `Agent versions: ${cell(agents)}.`] : []),
    '',
    `| target | plan | ${countColumns(view)
      .map(([, h]) => h)
      .join(' | ')} |`,
    `| --- | --- | ${countColumns(view)
      .map(() => '---')
      .join(' | ')} |`,
    ...view.targets.map(
      (t) =>
        `| ${cell(t.name)} | ${t.plan ? code(t.plan) : '-'} | ${countColumns(view)
          .map(([k]) => String(t[k]))
          .join(' | ')} |`,
    ),
    ...(rollout ? rolloutSection(rollout) : []),
  ];
  // The wave column only with a rollout: without one the tables stay as they always were.
  const waves = rollout !== undefined;
  for (const t of view.targets) {
    const members = view.devices.filter((d) => d.target === t.name);
    out.push('', `#### ${cell(t.name)}${t.plan ? ` (${code(t.plan)})` : ''}`, '');
    if (members.length === 0) {
      out.push('_no devices_');
      continue;
    }
    out.push(
      waves ? '| device | wave | state | time | description |' : '| device | state | time | description |',
      waves ? '| --- | --- | --- | --- | --- |' : '| --- | --- | --- | --- |',
    );
    for (const d of members) {
      const why = d.claimed !== undefined && d.reportReason ? ` (${d.reportReason})` : '';
      out.push(
        `| ${code(d.device)} |${waves ? ` ${d.wave ? cell(d.wave) : '-'} |` : ''} ${cell(deviceStateText(d))} | ${d.at ? utc(Date.parse(d.at)) : '-'} | ${cell(d.description + why)} |`,
      );
    }
  }
  return out.join('\n') + '\n';
}
