// What the supervision bench measures of one supervisor: the kills (each split with the programs' stamps and the agent's
// log), a burst of kills, and the idle window (RSS and CPU of the supervisor and of the programs).
import { assertPortsFree, askPid } from '../lib/ports.js';
import { clockTicksPerSecond, killStragglers, procStat, rssKiB } from '../lib/processes.js';
import { readStandInLog, readTextIfAny } from '../lib/stand-in.js';
import { epochNow, fmt, median, round, sleep } from '../lib/stats.js';
import { BURST, GAP_MS, IDLE_S, KILLS, N, names, ports } from './options.js';
import type { Supervisor } from './supervisors.js';

/** One kill -9 and its restart. */
export interface Kill {
  program: string;
  oldPid?: number;
  newPid?: number;
  killedAt?: number;
  seenAt?: number;
  ms?: number;
  error?: string;
  toNodeMs?: number;
  bootMs?: number;
  toListenMs?: number;
  toSeenMs?: number;
  toExitLoggedMs?: number;
  exitToStartingMs?: number;
}

/** What one supervisor gave (a row of the tables and of the results file). */
export interface Row {
  key: string;
  label: string;
  version: string | undefined;
  supervisorPid?: number;
  upMs?: number | null;
  burst?: { killed: number; firstMs: number | null; lastMs: number | null; eachMs: (number | null)[] };
  restart?: {
    kills: number;
    failed: number;
    medianMs: number | null;
    minMs: number | null;
    maxMs: number | null;
    restartDelayMs: number;
    spawnOverheadMs: number | null;
    parts: Record<string, number | null>;
    each: { program: string; ms: number | null; error?: string }[];
  };
  rssKiB?: number;
  rssKiBMax?: number;
  rssKiBBeforeIdle?: number | undefined;
  programsRssKiB?: number;
  idleCpuPercent?: number | null;
  programsIdleCpuPercent?: number | null;
  idleSeconds?: number | null;
  stillSupervised?: number;
  stragglersKilled?: number;
}

/** Polls every program until each answers (with its pid), or throws after `timeoutMs`. */
async function waitAllUp(timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  const pids: (number | undefined)[] = new Array(N);
  for (;;) {
    await Promise.all(ports.map(async (p, i) => (pids[i] = pids[i] ?? (await askPid(p, 500))?.pid)));
    const missing = pids.filter((x) => x === undefined).length;
    if (missing === 0) return pids as number[];
    if (Date.now() > deadline) throw new Error(`${missing} of ${N} programs never answered`);
    await sleep(100);
  }
}

/** Kill -9 the program on `port` and wait for another process to answer there. */
async function killAndTime(port: number): Promise<Omit<Kill, 'program'>> {
  const before = await askPid(port, 1000);
  if (!before) return { error: 'not answering before the kill' };
  const killedAt = epochNow();
  process.kill(before.pid, 'SIGKILL');
  const deadline = killedAt + 15_000;
  for (;;) {
    const r = await askPid(port, 250);
    if (r && r.pid !== before.pid)
      return { oldPid: before.pid, newPid: r.pid, killedAt, seenAt: r.connectedAt, ms: r.connectedAt - killedAt };
    if (epochNow() > deadline) return { oldPid: before.pid, killedAt, error: 'not back within 15 s' };
    await sleep(2);
  }
}

const cpuTicks = (pids: number[]) => pids.reduce((s, p) => s + (procStat(p)?.ticks ?? 0), 0);
const sumRss = (pids: number[]) => pids.reduce((s, p) => s + (rssKiB(p) ?? 0), 0);

export async function measure(sup: Supervisor, work: string): Promise<Row> {
  await assertPortsFree(ports);
  process.stderr.write(`${sup.label}: starting ${N} programs… `);
  const seen = new Set<number>();
  const result: Row = { key: sup.key, label: sup.label, version: sup.version };
  try {
    const t0 = epochNow();
    const pid = await sup.start();
    for (const p of await waitAllUp(120_000)) seen.add(p);
    const upMs = epochNow() - t0;
    process.stderr.write(`up in ${fmt(upMs)} ms; `);
    Object.assign(result, { supervisorPid: pid, upMs: round(upMs, 0) });
    await sleep(1500);
    const kills: Kill[] = [];
    if (sup.kills && KILLS > 0) {
      process.stderr.write(`${KILLS} kills… `);
      for (let k = 0; k < KILLS; k++) {
        const i = Math.floor(((k + 0.5) * N) / KILLS);
        const r: Kill = { program: names[i]!, ...(await killAndTime(ports[i]!)) };
        if (r.newPid) seen.add(r.newPid);
        kills.push(r);
        if (r.newPid && sup.settled) await sup.settled(r.program, r.newPid);
        await sleep(GAP_MS);
      }
      // Split each restart with the new program's own stamps (and, for Keystone, the agent's log).
      for (const r of kills) {
        if (!r.newPid) continue;
        const st = readStandInLog(readTextIfAny(sup.stdoutLog(r.program))).get(r.newPid);
        if (st)
          Object.assign(r, {
            toNodeMs: st.origin! - r.killedAt!,
            bootMs: st.started! - st.origin!,
            toListenMs: st.listening! - st.started!,
            toSeenMs: r.seenAt! - st.listening!,
          });
        if (sup.restartLog) {
          const a = sup.restartLog(r.program, r.newPid);
          if (a.exitedAt !== undefined) r.toExitLoggedMs = a.exitedAt - r.killedAt!;
          if (a.startingAt !== undefined && a.exitedAt !== undefined) r.exitToStartingMs = a.startingAt - a.exitedAt;
        }
      }
      if (BURST > 0) {
        // Several crashes at once (a shared dependency dying, an OOM kill sweeping): all killed together, each timed.
        process.stderr.write(`${BURST} at once… `);
        const picks = Array.from({ length: BURST }, (_, k) => Math.floor((k * N) / BURST));
        const before = await Promise.all(picks.map((i) => askPid(ports[i]!, 1000)));
        const killedAt = epochNow();
        for (const b of before) if (b) process.kill(b.pid, 'SIGKILL');
        const back = await Promise.all(
          picks.map(async (i, k) => {
            for (;;) {
              const r = await askPid(ports[i]!, 250);
              if (r && r.pid !== before[k]?.pid)
                return (seen.add(r.pid), { program: names[i]!, newPid: r.pid, ms: r.connectedAt - killedAt });
              if (epochNow() > killedAt + 30_000) return { program: names[i]!, newPid: undefined, ms: NaN };
              await sleep(2);
            }
          }),
        );
        for (const b of back) if (b.newPid && sup.settled) await sup.settled(b.program, b.newPid);
        const ms = back.map((b) => b.ms).sort((a, b) => a - b);
        result.burst = {
          killed: BURST,
          firstMs: round(ms[0]),
          lastMs: round(ms.at(-1)),
          eachMs: ms.map((x) => round(x)),
        };
      }
      await sleep(1000);
    }
    const pids = await waitAllUp(30_000);
    for (const p of pids) seen.add(p);
    const rssBefore = rssKiB(pid);
    const progRssBefore = sumRss(pids);
    process.stderr.write(`idle ${IDLE_S} s… `);
    const c0 = cpuTicks([pid]);
    const p0 = cpuTicks(pids);
    const w0 = epochNow();
    const rssSamples: (number | undefined)[] = [];
    for (let k = 0; k < IDLE_S; k++) {
      await sleep(1000);
      rssSamples.push(rssKiB(pid));
    }
    const c1 = cpuTicks([pid]);
    const p1 = cpuTicks(pids);
    const wallS = (epochNow() - w0) / 1000;
    const hz = clockTicksPerSecond();
    const stillThere = (await Promise.all(ports.map((p) => askPid(p, 500)))).filter(
      (r) => r && pids.includes(r.pid),
    ).length;
    const ok = kills.filter((r) => Number.isFinite(r.ms));
    Object.assign(result, {
      restart: ok.length
        ? {
            kills: kills.length,
            failed: kills.length - ok.length,
            medianMs: round(median(ok.map((r) => r.ms!))),
            minMs: round(Math.min(...ok.map((r) => r.ms!))),
            maxMs: round(Math.max(...ok.map((r) => r.ms!))),
            restartDelayMs: sup.restartDelayMs,
            // kill → the new node process exists, beyond the supervisor's own delay: the p50 of the kills.
            spawnOverheadMs: round(
              median(ok.map((r) => r.toNodeMs!).filter(Number.isFinite)) - (sup.restartDelayMs ?? 0),
              2,
            ),
            parts: Object.fromEntries(
              (['toExitLoggedMs', 'exitToStartingMs', 'toNodeMs', 'bootMs', 'toListenMs', 'toSeenMs'] as const)
                .map((k): [string, number[]] => [k, ok.map((r) => r[k]!).filter(Number.isFinite)])
                .filter(([, v]) => v.length)
                .map(([k, v]) => [k, round(median(v))]),
            ),
            each: kills.map((r) => ({ program: r.program, ms: round(r.ms), ...(r.error && { error: r.error }) })),
          }
        : undefined,
      rssKiB: median(rssSamples.filter(Number.isFinite) as number[]),
      rssKiBMax: Math.max(...(rssSamples.filter(Number.isFinite) as number[])),
      rssKiBBeforeIdle: rssBefore,
      programsRssKiB: sumRss(pids) || progRssBefore,
      idleCpuPercent: round(((c1 - c0) / hz / wallS) * 100, 2),
      programsIdleCpuPercent: round(((p1 - p0) / hz / wallS) * 100, 2),
      idleSeconds: round(wallS, 1),
      stillSupervised: stillThere,
    });
    process.stderr.write('done\n');
  } finally {
    const more = await sup.stop().catch(() => []);
    result.stragglersKilled = await killStragglers([...seen, ...more], work);
  }
  return result;
}
