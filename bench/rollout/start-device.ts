// One device of the rollout bench's fleets: `keystone agent` with the fleet's options in its own process group, its JSON
// log parsed as it comes.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { KEYSTONE_BIN, projectDir } from '../lib/paths.js';
import { signalGroup, signalPid } from '../lib/processes.js';
import type { AgentEvent, AgentExit } from '../lib/start-agent.js';
import { epochNow } from '../lib/stats.js';
import { opts } from './options.js';

/** A device's agent: its log, its stderr's tail, its exit once it has exited. */
export interface RolloutAgent {
  device: string;
  pid: number;
  events: AgentEvent[];
  stderr: string;
  exit: AgentExit | undefined;
  exited: Promise<AgentExit>;
  stop(graceMs?: number): Promise<AgentExit>;
}

/** One agent: `keystone agent` with the fleet's options, its JSON log parsed as it comes (as lib/start-agent.ts startAgent). */
export const startDevice = (url: string, device: string, stateDir: string, trustedKey: string): RolloutAgent => {
  const args = [
    KEYSTONE_BIN,
    'agent',
    '--repo',
    url,
    '--ref',
    'main',
    '--device',
    device,
    '--poll',
    opts.poll,
    '--trusted-key',
    trustedKey,
    '--status',
    'git-notes',
    '--listen',
    'none',
    '--state-dir',
    stateDir,
    '--log-format',
    'json',
    '--stop-on-exit',
  ];
  const child = spawn(process.execPath, args, { cwd: projectDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const a = { device, pid: child.pid!, events: [], stderr: '', exit: undefined } as unknown as RolloutAgent;
  a.exited = new Promise<AgentExit>((resolve) =>
    child.once('exit', (code, signal) => resolve((a.exit = { code, signal }))),
  );
  child.stderr.on('data', (d) => (a.stderr = (a.stderr + d).slice(-5000)));
  createInterface({ input: child.stdout }).on('line', (line) => {
    let rec: AgentEvent;
    try {
      rec = JSON.parse(line);
    } catch {
      rec = { msg: line } as AgentEvent;
    }
    rec.recv = epochNow();
    rec.t = rec.time ? Date.parse(rec.time) : rec.recv;
    a.events.push(rec);
  });
  a.stop = async (graceMs = 15_000) => {
    if (a.exit) return a.exit;
    signalPid(a.pid, 'SIGTERM');
    const t = setTimeout(() => signalGroup(a.pid, 'SIGKILL'), graceMs);
    const r = await a.exited;
    clearTimeout(t);
    return r;
  };
  return a;
};
