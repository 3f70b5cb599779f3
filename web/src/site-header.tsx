// Which device and agent this is, how the device is (uptime, load, memory, disk, temperature), an agent update on
// trial, put back or not possible here, what revision it runs, whether the page is live, and the way out.
import { AgentUpdateLine } from './agent-update-line.js';
import type { DashboardData } from './dashboard-data.js';
import { DeviceHealthLine } from './device-health-line.js';
import { shortRevision } from './format.js';
import type { Route } from './route.js';

interface Props {
  data: DashboardData;
  route: Route;
  onSignOut(): void;
}

export function SiteHeader({ data, route, onSignOut }: Props) {
  const r = data.revision.value;
  const agent = data.agent ?? r?.agent;
  return (
    <header class="site-header">
      <div class="header-inner">
        <a class="brand" href="#/">
          <span class="brand-mark" aria-hidden="true" />
          Keystone
        </a>
        <nav aria-label="Views" class="views">
          <a href="#/" aria-current={route.view === 'overview' ? 'page' : undefined}>
            Overview
          </a>
          <a href="#/history" aria-current={route.view === 'history' ? 'page' : undefined}>
            History
          </a>
        </nav>
        <div class="device">
          <p data-field="agent">
            <span title="This device's agent">{location.host}</span>
            {agent && (
              <span class="muted">
                {' '}
                · agent pid {agent.pid} · v{agent.version}
              </span>
            )}
          </p>
          {agent?.health && <DeviceHealthLine health={agent.health} />}
          {agent?.update && <AgentUpdateLine update={agent.update} />}
        </div>
        <p class="header-revision" data-field="revision">
          {r ? (
            <>
              <span class="muted">rev </span>
              <code title={r.id}>{shortRevision(r.id)}</code>
              {r.unsigned && <span class="badge tone-warn">UNSIGNED</span>}
            </>
          ) : (
            <span class="muted">{data.revision.loaded ? 'no revision' : ''}</span>
          )}
        </p>
        <p id="live" class={data.live ? 'live on' : 'live off'}>
          {data.live ? 'live' : 'reconnecting…'}
        </p>
        <button type="button" class="small quiet sign-out" onClick={onSignOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}
