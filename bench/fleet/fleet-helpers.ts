// What the fleet bench reads beside the server's records: a device's Git cache, every device's notes ref on the server
// (and the wait for every device's success), the CPU of the fleet and of the server, the size of an advertisement.
import { readdirSync, statSync } from 'node:fs';
import { get } from 'node:http';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clockTicksPerSecond, procStat } from '../lib/processes.js';
import type { ProgramResult } from '../lib/run-program.js';
import type { Agent, AgentExit } from '../lib/start-agent.js';
import { epochNow, fmt, round, sleep } from '../lib/stats.js';

/** git with the benches' environment. */
export type Git = (...args: string[]) => Promise<ProgramResult>;
/** One device's agent, with its device name and its exit once it has exited. */
export type FleetAgent = Agent & { device: string; exit?: AgentExit };

/** Bytes of the packs in a device's Git cache (<state-dir>/git, every generation kept): what its fetches stored. */
export const cachePackBytes = (stateDir: string): number | undefined => {
  let total = 0;
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.pack')) total += statSync(join(dir, e.name)).size;
    }
  };
  try {
    walk(join(stateDir, 'git'));
  } catch {
    return undefined;
  }
  return total;
};

/** Every device's notes ref on the server: device → { oid, state, commit } (from the notes commit's subject). */
const readNotes = async (git: Git, bare: string) => {
  const out = (
    await git(
      '-C',
      bare,
      'for-each-ref',
      '--format=%(refname) %(objectname) %(contents:subject)',
      'refs/notes/keystone-devices/',
    )
  ).stdout;
  const notes = new Map<string, { oid: string; state: string; commit: string }>();
  for (const line of out.split('\n')) {
    const m = /^refs\/notes\/keystone-devices\/(\S+) ([0-9a-f]+) keystone\/\S+: (\S+) ([0-9a-f]{40})$/.exec(line);
    if (m) notes.set(decodeURIComponent(m[1]!), { oid: m[2]!, state: m[3]!, commit: m[4]! });
  }
  return notes;
};
/**
 * Polls the bare repository every ~200 ms until every device's ref says `success` for `sha` (deadline); returns
 * device → epoch ms when the bench first saw it (and the pending note, when seen before).
 */
export const waitForSuccess = async (
  git: Git,
  agents: FleetAgent[],
  bare: string,
  devices: string[],
  sha: string,
  deadlineMs: number,
  what: string,
) => {
  const seen = new Map<string, number>();
  const pendingSeen = new Map<string, number>();
  const until = epochNow() + deadlineMs;
  for (;;) {
    const notes = await readNotes(git, bare);
    const t = epochNow();
    for (const d of devices) {
      const n = notes.get(d);
      if (n?.commit !== sha) continue;
      if (n.state === 'pending' && !pendingSeen.has(d)) pendingSeen.set(d, t);
      if (n.state === 'success' && !seen.has(d)) seen.set(d, t);
      if (n.state === 'failure' || n.state === 'error')
        throw new Error(`${d} reported ${n.state} for ${sha.slice(0, 7)}`);
    }
    if (seen.size === devices.length) return { seen, pendingSeen };
    if (t > until) {
      const missing = devices.filter((d) => !seen.has(d));
      const exited = agents.filter((a) => a.exit).map((a) => `${a.device}: ${a.stderr.slice(-300)}`);
      throw new Error(
        `${what}: ${missing.length} device(s) without a success note after ${fmt(deadlineMs)} ms (${missing.slice(0, 5).join(', ')}…)${exited.length ? `; exited: ${exited.join(' | ')}` : ''}`,
      );
    }
    await sleep(200);
  }
};

/**
 * CPU of the fleet (the agents, their components) and of the server (with its reaped `git http-backend`
 * children) since the last call, as a share of the machine's cores: on 2 cores, N agents and the server compete
 * for the same CPU, so a slow report may be the machine's doing rather than the protocol's.
 */
export const cpuMeter = (agents: () => FleetAgent[], serverPid: number) => {
  const read = () => ({
    at: performance.now(),
    fleet: agents().reduce((s, a) => s + (procStat(a.pid)?.withChildren ?? 0), 0),
    server: procStat(serverPid)?.withChildren ?? 0,
  });
  let last = read();
  return () => {
    const now = read();
    const capacity = ((now.at - last.at) / 1000) * clockTicksPerSecond() * cpus().length;
    const r = {
      fleetPercent: round(((now.fleet - last.fleet) / capacity) * 100, 1),
      serverPercent: round(((now.server - last.server) / capacity) * 100, 1),
    };
    last = now;
    return r;
  };
};

/** Body size of GET info/refs?service=S (with a Git-Protocol header for v2). */
export const advertBytes = (url: string, service: string, v2: boolean) =>
  new Promise<number>((resolve, reject) => {
    const req = get(
      `${url}/info/refs?service=${service}`,
      { headers: v2 ? { 'git-protocol': 'version=2' } : {} },
      (res) => {
        let bytes = 0;
        res.on('data', (d) => (bytes += d.length));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(bytes)
            : reject(new Error(`GET info/refs?service=${service}: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
  });
