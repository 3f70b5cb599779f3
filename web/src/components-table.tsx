// One row per component, and a group's members as rows nested under the group's own. At phone width the rows become
// stacked cards (styles.css); each cell's data-label names it there.
import { ActionButtons } from './action-buttons.js';
import type { ComponentView, GroupView } from '../../src/api/views.js';
import { isGroup, type ListItem } from './api-types.js';
import { Badge, toneOf } from './badge.js';
import type { PullProgress } from './dashboard-data.js';
import { bytes, instanceText } from './format.js';
import { relativeTime, useTick } from './relative-time.js';
import { componentHref } from './route.js';

interface Props {
  items: ListItem[];
  pulls: Record<string, PullProgress>;
  id?: string;
  caption: string;
}

function pullText(p: PullProgress): string {
  const pct = p.totalBytes ? ` ${Math.floor(((p.currentBytes ?? 0) / p.totalBytes) * 100)} %` : '';
  const size = p.totalBytes ? ` (${bytes(p.currentBytes ?? 0)} of ${bytes(p.totalBytes)})` : '';
  return `pulling ${p.image}${pct}${size}${p.status ? `: ${p.status}` : ''}`;
}

function note(c: ComponentView | GroupView, pull: PullProgress | undefined): string {
  const parts: string[] = [];
  if (pull) parts.push(pullText(pull));
  // crash-looping says "held" by itself.
  if (c.held && c.state !== 'crash-looping') parts.push('held stopped');
  if (!isGroup(c) && c.reason) parts.push(c.reason);
  return parts.join(' · ');
}

function Row({
  c,
  memberOf,
  pull,
}: {
  c: ComponentView | GroupView;
  memberOf?: string;
  pull: PullProgress | undefined;
}) {
  const group = isGroup(c);
  const since = group ? null : c.since;
  return (
    <tr
      data-component={c.name}
      data-state={c.state}
      data-member-of={memberOf}
      class={group ? 'group-row' : memberOf ? 'member-row' : undefined}
    >
      <td data-col="name" data-label="Component">
        <a href={componentHref(c.name)}>{c.name}</a>
      </td>
      <td data-col="state" data-label="State">
        <Badge word={c.state} />
      </td>
      <td data-col="version" data-label="Version">
        {c.version || '—'}
      </td>
      <td data-col="instance" data-label="Instance" class="mono">
        {instanceText(c)}
      </td>
      <td
        data-col="health"
        data-label="Health"
        title={!group && c.healthCheck ? `health check: ${c.healthCheck}` : undefined}
      >
        <span class={`health tone-${toneOf(c.health)}`}>{c.health}</span>
      </td>
      <td data-col="restarts" data-label="Restarts" class={c.restarts > 0 ? 'num warn-text' : 'num'}>
        {c.restarts}
      </td>
      <td data-col="since" data-label="Since" title={since ? since : undefined}>
        {since ? <time dateTime={since}>{relativeTime(since)}</time> : '—'}
      </td>
      <td data-col="reason" data-label="Note" class="reason">
        {note(c, pull)}
      </td>
      <td data-col="actions">
        <ActionButtons name={c.name} />
      </td>
    </tr>
  );
}

export function ComponentsTable({ items, pulls, id, caption }: Props) {
  useTick();
  return (
    <div class="table-scroll">
      <table id={id} class="components">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Component</th>
            <th scope="col">State</th>
            <th scope="col">Version</th>
            <th scope="col">Instance</th>
            <th scope="col">Health</th>
            <th scope="col" class="num">
              Restarts
            </th>
            <th scope="col">Since</th>
            <th scope="col">Note</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.flatMap((c) =>
            isGroup(c)
              ? [
                  <Row key={c.name} c={c} pull={pulls[c.name]} />,
                  ...c.members.map((m) => <Row key={m.name} c={m} memberOf={c.name} pull={pulls[m.name]} />),
                ]
              : [<Row key={c.name} c={c} pull={pulls[c.name]} />],
          )}
        </tbody>
      </table>
    </div>
  );
}
