// Whether this agent can update itself (SPEC §17), and the updater it runs with: only a packaged agent run by systemd
// can (the launcher, agent-rollback and the unit's restart are what switch versions and put them back). Any other
// agent (npm, a checkout, a container) follows [agent] by saying it cannot, in its status, and applies the rest.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { debArchOf } from '../core/agent-section.js';
import type { Logger } from '../log/logger.js';
import { bundleDir, packageManifest } from '../package-manifest.js';
import { ARTIFACT_CACHE_DIR } from '../state-dir/layout.js';
import { LIVE_STATES, type StateStore } from '../store/state-store.js';
import { agentHome, DEFAULT_AGENT_HOME, PACKAGE_LIB } from './agent-home.js';
import { AgentUpdater } from './agent-updater.js';

export interface AgentUpdateSetup {
  stateDir: string;
  log: Logger;
  store: () => StateStore;
  now: () => number;
  /** `--allow-agent-update`: without it, the agent says it may not update itself and applies the rest. */
  allowed: boolean;
  /** Tests: another home, unit and package directory, and whether to pretend to be packaged. */
  home?: string;
  unit?: string;
  packageLib?: string;
  exec?: ConstructorParameters<typeof AgentUpdater>[0]['exec'];
}

export function agentUpdater(o: AgentUpdateSetup): AgentUpdater {
  const home = agentHome(o.home ?? DEFAULT_AGENT_HOME);
  const unit = o.unit ?? systemdUnit();
  const unsupported = o.allowed
    ? whyNot(home.versions, unit, o.home !== undefined)
    : 'this device does not allow agent updates (--allow-agent-update, allow-agent-update = true)';
  return new AgentUpdater({
    home,
    version: packageManifest().version,
    arch: debArchOf(process.arch),
    ...(unsupported !== undefined && { unsupported }),
    unit: unit ?? 'keystone.service',
    packageLib: o.packageLib ?? PACKAGE_LIB,
    node: process.execPath,
    cacheDir: join(o.stateDir, ARTIFACT_CACHE_DIR),
    instances: () => instancesOf(o.store()),
    snapshot: (file) => o.store().snapshotTo(file),
    log: o.log.child({ module: 'agent-update' }),
    now: o.now,
    ...(o.exec && { exec: o.exec }),
  });
}

/** Each live component's instance as the trial file keeps it: a pid, or `c-` and 12 digits of a container's id. */
export function instancesOf(store: StateStore): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of store.components()) {
    const i = c.instance;
    if (!i || !LIVE_STATES.has(c.state)) continue;
    out[c.name] = i.kind === 'process' ? String(i.pid) : `c-${i.id.slice(0, 12)}`;
  }
  return out;
}

function whyNot(versions: string, unit: string | undefined, testing: boolean): string | undefined {
  if (!testing && (bundleDir === undefined || !(bundleDir === PACKAGE_LIB || bundleDir.startsWith(`${versions}/`))))
    return 'not run from the keystone package (/usr/lib/keystone)';
  if (unit === undefined) return 'not run by systemd as a service';
  if (!existsSync('/usr/bin/dpkg-deb')) return 'no dpkg-deb on this device';
  return undefined;
}

/** The systemd service this process runs in (its cgroup's last part), e.g. keystone.service. */
function systemdUnit(): string | undefined {
  try {
    const cgroup = readFileSync('/proc/self/cgroup', 'utf8');
    return /\/([^/\n]+\.service)$/m.exec(cgroup)?.[1];
  } catch {
    return undefined;
  }
}
