// #/components/NAME: everything the agent knows about one component, its actions and its log.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ActionButtons } from './action-buttons.js';
import { api, ApiError, componentPath, messageOf } from './api-client.js';
import type { ComponentView, GroupView } from '../../src/api/views.js';
import { isGroup, type ListItem } from './api-types.js';
import { Badge, toneOf } from './badge.js';
import { ComponentsTable } from './components-table.js';
import type { PullProgress } from './dashboard-data.js';
import { instanceText } from './format.js';
import { LogTail } from './log-tail.js';
import { localTime } from './relative-time.js';
import { componentHref } from './route.js';
import { TimeAgo } from './time-ago.js';

interface Props {
  name: string;
  /** The list as last read: the page follows it, so the events keep it current without requests of its own. */
  items: ListItem[] | undefined;
  pulls: Record<string, PullProgress>;
}

export function findComponent(items: ListItem[], name: string): ComponentView | GroupView | undefined {
  for (const c of items) {
    if (c.name === name) return c;
    if (isGroup(c)) {
      const m = c.members.find((x) => x.name === name);
      if (m) return m;
    }
  }
  return undefined;
}

function exitText(e: NonNullable<ComponentView['lastExit']>): string {
  if (e.signal) return `signal ${e.signal}`;
  if (e.code !== null) return `code ${e.code}`;
  return 'unknown';
}

function Fact({ label, children, field }: { label: string; children: ComponentChildren; field?: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd data-field={field}>{children}</dd>
    </>
  );
}

function Details({ c }: { c: ComponentView }) {
  return (
    <dl class="facts">
      <Fact label="State" field="state">
        <Badge word={c.state} />
        {c.held && c.state !== 'crash-looping' && <span class="muted"> held stopped</span>}
      </Fact>
      <Fact label="Health" field="health">
        <span class={`health tone-${toneOf(c.health)}`}>{c.health}</span>
        {c.healthySince && c.state === 'running' && (
          <span class="muted">
            {' '}
            since <TimeAgo iso={c.healthySince} />
          </span>
        )}
      </Fact>
      <Fact label="Health check" field="healthCheck">
        {c.healthCheck ? <code class="wrap">{c.healthCheck}</code> : '—'}
      </Fact>
      <Fact label="Version" field="version">
        {c.version || '—'}
        {c.hash && (
          <span class="muted" title={c.hash}>
            {' '}
            · {c.hash.slice(0, 12)}
          </span>
        )}
      </Fact>
      <Fact label="Runtime" field="runtime">
        {c.runtime}
      </Fact>
      <Fact label={c.runtime === 'container' ? 'Container' : 'Process'} field="instance">
        <span class="mono" title={c.containerId ?? undefined}>
          {instanceText(c)}
        </span>
      </Fact>
      <Fact label="Restarts" field="restarts">
        {c.restarts}
      </Fact>
      <Fact label="Since" field="since">
        <span title={c.since}>
          {localTime(c.since)} (<TimeAgo iso={c.since} />)
        </span>
      </Fact>
      <Fact label="Reason" field="reason">
        {c.reason ? <span class="wrap">{c.reason}</span> : '—'}
      </Fact>
      <Fact label="Last exit" field="lastExit">
        {c.lastExit ? (
          <>
            {exitText(c.lastExit)}, <TimeAgo iso={c.lastExit.at} />
          </>
        ) : (
          'none'
        )}
      </Fact>
    </dl>
  );
}

function Dependencies({ c, items }: { c: ComponentView; items: ListItem[] }) {
  const all = items.flatMap((x) => (isGroup(x) ? x.members : [x]));
  const dependents = all.flatMap((x) =>
    x.dependencies.filter((d) => d.component === c.name).map((d) => ({ component: x.name, type: d.type })),
  );
  const list = (deps: Array<{ component: string; type: string }>) =>
    deps.length === 0 ? (
      <p class="muted">none</p>
    ) : (
      <ul class="deps">
        {deps.map((d) => (
          <li key={d.component} data-dependency={d.component} data-kind={d.type}>
            <a href={componentHref(d.component)}>{d.component}</a> <span class={`kind kind-${d.type}`}>{d.type}</span>
          </li>
        ))}
      </ul>
    );
  return (
    <div class="two-col">
      <section aria-labelledby="deps-title">
        <h2 id="deps-title">Depends on</h2>
        {list(c.dependencies)}
      </section>
      <section aria-labelledby="dependents-title">
        <h2 id="dependents-title">Needed by</h2>
        {list(dependents)}
      </section>
    </div>
  );
}

function Inputs({ inputs }: { inputs: Record<string, string> | null }) {
  const entries = Object.entries(inputs ?? {});
  return (
    <section aria-labelledby="inputs-title">
      <h2 id="inputs-title">Inputs</h2>
      {entries.length === 0 ? (
        <p class="muted">No configuration values.</p>
      ) : (
        <div class="table-scroll">
          <table class="kv">
            <caption class="visually-hidden">Configuration values</caption>
            <tbody>
              {entries.map(([k, v]) => (
                <tr key={k} data-input={k}>
                  <th scope="row">
                    <code>{k}</code>
                  </th>
                  <td>
                    <code class="wrap">{v}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function ComponentPage({ name, items, pulls }: Props) {
  const listed = items && findComponent(items, name);
  // Not in the list (replicas of one member, `app/jobs`, or a list not read yet): ask for it by name.
  const [fetched, setFetched] = useState<{
    name: string;
    value?: ComponentView | GroupView;
    error?: ApiError | Error;
  }>();
  const needFetch = items !== undefined && !listed;
  useEffect(() => {
    if (!needFetch) return;
    let cancelled = false;
    api<ComponentView | GroupView>(componentPath(name)).then(
      (value) => cancelled || setFetched({ name, value }),
      (e: unknown) => cancelled || setFetched({ name, error: e instanceof Error ? e : new Error(messageOf(e)) }),
    );
    return () => {
      cancelled = true;
    };
  }, [name, needFetch, items]);
  useEffect(() => {
    document.title = `${name} · Keystone`;
  }, [name]);

  const c = listed ?? (fetched?.name === name ? fetched.value : undefined);
  const error = !listed && fetched?.name === name ? fetched.error : undefined;
  return (
    <section id="component" aria-labelledby="component-title" data-component={name} data-state={c?.state}>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Overview</a> <span aria-hidden="true">/</span> <span>{name}</span>
      </nav>
      <div class="title-row">
        <h1 id="component-title" tabIndex={-1}>
          {name}
        </h1>
        {c && <Badge word={c.state} />}
        {c && <ActionButtons name={name} />}
      </div>
      {!c && !error && <p class="muted">Loading…</p>}
      {error && (
        <p class="error">
          {error instanceof ApiError && error.code === 'KS_COMPONENT_NOT_FOUND'
            ? `There is no component ${name} on this device.`
            : error.message}
        </p>
      )}
      {c && isGroup(c) && (
        <>
          <p>
            A {c.kind} of {c.members.length} {c.members.length === 1 ? 'unit' : 'units'}, version {c.version || '—'};
            its state is its least well member's.
          </p>
          <section aria-labelledby="members-title">
            <h2 id="members-title">Members</h2>
            <ComponentsTable items={c.members} pulls={pulls} caption={`Members of ${name}`} />
          </section>
        </>
      )}
      {c && !isGroup(c) && (
        <>
          <Details c={c} />
          <Dependencies c={c} items={items ?? [c]} />
          <Inputs inputs={c.inputs} />
          <LogTail name={name} />
        </>
      )}
    </section>
  );
}
