// What actually runs for the agent, seen from outside it: the component processes through /proc (the harness's
// helpers) and the containers through the engine's owner label. The invariants compare this with the store's records.
import { readFileSync, readlinkSync } from 'node:fs';
import Docker from 'dockerode';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import type { AgentProcess, ProcInfo } from '../../test/support/agent-harness.js';
import type { ChaosAgent } from './chaos-agent.js';
import { GAUGE, GAUGE_MARKER, type ChaosRepo } from './chaos-repo.js';

const docker = new Docker({ socketPath: '/var/run/docker.sock' });

/** A live container of the agent's (any state but removed). */
export interface OwnedContainer {
  id: string;
  component: string;
  running: boolean;
}

export async function ownedContainers(tag: string): Promise<OwnedContainer[]> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABELS.owner}=${tag}`] } });
  return list.map((c) => ({ id: c.Id, component: c.Labels[LABELS.component] ?? '?', running: c.State === 'running' }));
}

/** Sends SIGKILL to a container's main process through the engine (a crash of the container's program). */
export async function killContainer(id: string): Promise<void> {
  await docker.getContainer(id).kill({ signal: 'SIGKILL' });
}

/** How a component's instance shows on the process list: the stand-in's file, side's `sleep 100000`, gauge's `sleep 200000`. */
export function instanceMarker(repo: ChaosRepo, name: string): string {
  if (name === 'app/api') return 'fake-reports.mjs';
  if (name === 'app/side') return '100000';
  if (name === GAUGE) return GAUGE_MARKER;
  return repo.fx.spec(name).artifact!;
}

/** A pid's working directory and command line, for a failure report. */
function describePid(pid: number): string {
  try {
    return `${readlinkSync(`/proc/${pid}/cwd`)} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')}`;
  } catch {
    return 'gone';
  }
}

/** Children of the live agent that come and go: cmd: health probes and install scripts (setpriv, then sh -c). */
function isHelperOf(agent: AgentProcess | undefined, p: ProcInfo): boolean {
  return (
    agent !== undefined &&
    p.stat.ppid === agent.pid &&
    (p.argv[0]?.endsWith('/setpriv') === true || p.argv[0] === '/bin/sh')
  );
}

export interface DeviceView {
  /** Problems with the records themselves: a running record whose process or container is not what it names. */
  dead: string[];
  /** Components with other than exactly one instance (the recorded one). */
  duplicates: string[];
  /** Processes and containers no record accounts for. */
  orphans: string[];
}

/** Compares every record with what runs; empty lists when the device runs exactly what the store says. */
export async function viewDevice(repo: ChaosRepo, ca: ChaosAgent): Promise<DeviceView> {
  const view: DeviceView = { dead: [], duplicates: [], orphans: [] };
  const records = ca.h.components();
  const recordedPids = new Map<number, string>();
  const recordedContainers = new Map<string, string>();
  for (const c of records) {
    if (c.instance?.kind === 'process') {
      recordedPids.set(c.instance.pid, c.name);
      if (c.state === 'running' && !isSameProcess(c.instance.pid, c.instance.startTime))
        view.dead.push(`${c.name}: recorded pid ${c.instance.pid} is not that process`);
    } else if (c.instance?.kind === 'container') recordedContainers.set(c.instance.id, c.name);
  }
  for (const c of records) {
    if (c.runtime !== 'process') continue;
    const marker = instanceMarker(repo, c.name);
    const instances = ca.h.processesOf(c.name).filter((p) => p.argv.includes(marker));
    if (instances.length !== 1 || recordedPids.get(instances[0]!.pid) !== c.name)
      view.duplicates.push(
        `${c.name} (${c.state}, recorded ${c.instance?.kind === 'process' ? `pid ${c.instance.pid}: ${describePid(c.instance.pid)}` : 'no process'}): ${instances.length} instance(s) [${instances.map((p) => `${p.pid}${recordedPids.get(p.pid) === c.name ? ' (recorded)' : ''} ${p.argv.join(' ')}`).join('; ')}]`,
      );
  }
  // A component's process runs in its own session, led by the recorded pid: anything else is nobody's.
  for (const p of ca.h.processes()) {
    if (recordedPids.has(p.stat.session) || isHelperOf(ca.agent, p)) continue;
    view.orphans.push(
      `process ${p.pid} (session ${p.stat.session}, parent ${p.stat.ppid}) ${p.argv.join(' ')} in ${p.cwd}`,
    );
  }
  if (ca.withContainer) {
    const owned = await ownedContainers(ca.tag);
    for (const c of records.filter((r) => r.runtime === 'container')) {
      const mine = owned.filter((o) => o.component === c.name);
      const id = c.instance?.kind === 'container' ? c.instance.id : undefined;
      if (mine.length !== 1 || mine[0]!.id !== id)
        view.duplicates.push(
          `${c.name}: ${mine.length} container(s) [${mine.map((o) => `${o.id.slice(0, 12)}${o.id === id ? ' (recorded)' : ''}`).join(', ')}]`,
        );
      if (c.state === 'running' && !owned.some((o) => o.id === id && o.running))
        view.dead.push(`${c.name}: recorded container ${id?.slice(0, 12)} is not running`);
    }
    for (const o of owned)
      if (!recordedContainers.has(o.id))
        view.orphans.push(
          `container ${o.id.slice(0, 12)} of ${o.component} (${o.running ? 'running' : 'not running'})`,
        );
  }
  return view;
}
