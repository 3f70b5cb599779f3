// The rollout bench's reading of the server's records (a look, a gate read, a fetch, a report: the v2 ls-refs POSTs told
// apart by their body's size), the size of a fetch's advertisement, and what an agent's log says of a commit.
import { get } from 'node:http';
import { lsRefsRequest } from '../../dist/git/git-ls-refs.js';
import type { ServedRequest } from '../../dist/dev/git-http-server.js';
import { failuresPrefix, rolloutPrefixes } from '../../dist/report/rollout-refs.js';
import type { AgentEvent } from '../lib/start-agent.js';
import { WAVES } from './options.js';
import type { RolloutAgent } from './start-device.js';

/** Requests and bytes of one kind. */
export interface KindTally {
  requests: number;
  bytesOut: number;
  bytesIn: number;
  gets: number;
  non200: number;
}
export interface Tally {
  requests: number;
  bytesOut: number;
  bytesIn: number;
  byKind: Record<string, KindTally>;
}

// The request bodies of an agent's look and of its gate reads (a complete read: every bucket of each wave up to its
// own, and the failures of the one commit held in each), to tell them apart in the server's log: both are protocol
// v2 ls-refs POSTs to git-upload-pack. A commit id's length is all that matters to the size.
export const lookBody = lsRefsRequest(['refs/heads/main'], 'keystone').length;
const completeRead = (waves: { name: string }[]) =>
  waves.flatMap((x) => [...rolloutPrefixes([x.name]), failuresPrefix(x.name, '0'.repeat(40))]);
export const gateBodies = new Map(
  WAVES.map((w, k) => [lsRefsRequest(completeRead(WAVES.slice(0, k + 1)), 'keystone').length, w.name]),
);
export const kindOf = (r: ServedRequest): string => {
  const service = /service=(git-[a-z-]+)/.exec(r.query)?.[1] ?? /\/(git-[a-z-]+)$/.exec(r.path)?.[1];
  if (service === 'git-receive-pack') return 'report';
  if (service !== 'git-upload-pack') return 'other';
  if (r.protocol !== 'version=2') return 'fetch';
  if (r.method === 'POST' && r.received === lookBody) return 'look';
  if (r.method === 'POST' && gateBodies.has(r.received)) return 'gate';
  return 'v2-other';
};
export const tally = (recs: ServedRequest[]): Tally => {
  const t: Tally = { requests: recs.length, bytesOut: 0, bytesIn: 0, byKind: {} };
  for (const r of recs) {
    t.bytesOut += r.bytes;
    t.bytesIn += r.received;
    const k = (t.byKind[kindOf(r)] ??= { requests: 0, bytesOut: 0, bytesIn: 0, gets: 0, non200: 0 });
    k.requests++;
    k.bytesOut += r.bytes;
    k.bytesIn += r.received;
    if (r.method === 'GET') k.gets++;
    if (r.status !== 200) k.non200++;
  }
  return t;
};

/** Body size of `GET info/refs?service=git-upload-pack` in protocol v1 (the advertisement a fetch starts with). */
export const advertBytes = (url: string) =>
  new Promise<number>((resolve, reject) => {
    const req = get(`${url}/info/refs?service=git-upload-pack`, (res) => {
      let bytes = 0;
      res.on('data', (d) => (bytes += d.length));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(bytes) : reject(new Error(`GET info/refs: HTTP ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
  });

const isDone = (e: AgentEvent) =>
  e.msg === 'all components running' || e.msg === 'apply finished' || e.msg?.startsWith?.('apply failed');
/** From an agent's log: when it found `sha`, opened its gate, began and ended applying it (epoch ms; undefined: never). */
export const logOf = (a: RolloutAgent, sha: string) => {
  const at = (pred: (e: AgentEvent) => unknown) => a.events.find(pred)?.t;
  const planIdx = a.events.findIndex((e) => e.msg === 'reconcile plan' && e.revision === sha);
  const done = planIdx >= 0 ? a.events.find((e, i) => i > planIdx && isDone(e)) : undefined;
  return {
    newRevision: at((e) => e.msg === 'new revision' && e.revision === sha),
    gateOpen: at((e) => e.msg === 'rollout gate open' && e.revision === sha),
    firstHeld: at((e) => e.revision === sha && typeof e.msg === 'string' && e.msg.startsWith('held: ')),
    halted: at((e) => e.revision === sha && typeof e.msg === 'string' && e.msg.startsWith('halted at ')),
    plan: planIdx >= 0 ? a.events[planIdx]!.t : undefined,
    done: done?.t,
    outcome: done?.msg,
    applyMs: planIdx >= 0 && done ? done.t - a.events[planIdx]!.t : undefined,
  };
};
export const warningsOf = (list: RolloutAgent[], since: number) => {
  const w: Record<string, { count: number; example: string }> = {};
  for (const e of list.flatMap((a) => a.events.filter((x) => x.level >= 40 && x.t >= since))) {
    const key = `${e.msg ?? `${e.component ?? ''} ${e.state ?? e.event ?? ''}`.trim()}${e.code ? ` (${e.code})` : ''}`;
    w[key] ??= { count: 0, example: String(e.err?.message ?? e.err ?? e.error ?? e.reason ?? '').slice(0, 200) };
    w[key]!.count++;
  }
  return w;
};
