// The convergence bench's tables: the wall time against its references, and where it goes along the last chain.
import { fmt, ratio } from '../lib/stats.js';
import { label, type Concurrency } from './options.js';
import type { RunResult } from './run-once.js';

/** A row of a size: its median run, with the concurrency asked for, every run's wall time and the held schedule simulated. */
export type SizeRow = RunResult & { requested: Concurrency; wallRunsMs: number[]; simEagerMs: number };
/** What one graph gave. */
export interface SizeResult {
  n: number;
  shape: string;
  layers: number;
  edges: number;
  soloBootMs: number | null;
  ownCriticalPathMs: number | null;
  delaysMs: { min: number; max: number; sum: number };
  criticalPathMs: number;
  layeredMs: number;
  rows: SizeRow[];
}

export function table(results: SizeResult[]): string {
  const lines: string[] = [];
  const head = [
    'N'.padStart(3),
    'conc'.padStart(11),
    'wall ms'.padStart(8),
    'own path'.padStart(8),
    '÷own'.padStart(6),
    'crit path'.padStart(9),
    '÷crit'.padStart(6),
    'layered'.padStart(8),
    '÷layer'.padStart(7),
    'held sim@c'.padStart(11),
    '÷held'.padStart(6),
    '│',
    'overhead/comp ms (p50 p90)'.padStart(26),
  ];
  lines.push(head.join(' '));
  lines.push('─'.repeat(head.join(' ').length));
  for (const s of results)
    for (const r of s.rows) {
      lines.push(
        [
          s.shape.padStart(3),
          label(r.requested).padStart(11),
          fmt(r.wallMs).padStart(8),
          fmt(s.ownCriticalPathMs).padStart(8),
          ratio(r.wallMs, s.ownCriticalPathMs).padStart(6),
          fmt(s.criticalPathMs).padStart(9),
          ratio(r.wallMs, s.criticalPathMs).padStart(6),
          fmt(s.layeredMs).padStart(8),
          ratio(r.wallMs, s.layeredMs).padStart(7),
          fmt(r.simEagerMs).padStart(11),
          ratio(r.wallMs, r.simEagerMs).padStart(6),
          '│',
          (r.failure
            ? `failed: ${r.failure}`.slice(0, 26)
            : `${fmt(r.overheadMs!.mean)} (${fmt(r.overheadMs!.p50)} ${fmt(r.overheadMs!.p90)})`
          ).padStart(26),
        ].join(' '),
      );
    }
  return lines.join('\n');
}

export function gapTable(results: SizeResult[]): string {
  const lines: string[] = [];
  const cols = ['delays', 'dispatch', 'prepare', 'boot', 'late', 'detect', 'finish', '= wall'];
  lines.push(
    `${'N'.padStart(3)} ${'conc'.padStart(11)} ${'chain'.padStart(5)}  ${cols.map((c) => c.padStart(8)).join(' ')}   mean per component: prepare boot detect`,
  );
  lines.push('─'.repeat(3 + 1 + 11 + 1 + 5 + 2 + cols.length * 9 + 40));
  for (const s of results)
    for (const r of s.rows) {
      if (r.failure) continue;
      const c = r.chainMs as Record<
        'delay' | 'dispatch' | 'prepare' | 'boot' | 'delayLate' | 'detect' | 'finish',
        number
      >;
      const sum = c.delay + c.dispatch + c.prepare + c.boot + c.delayLate + c.detect + c.finish;
      const vals = [c.delay, c.dispatch, c.prepare, c.boot, c.delayLate, c.detect, c.finish, sum];
      lines.push(
        `${s.shape.padStart(3)} ${label(r.requested).padStart(11)} ${String(r.chain!.length).padStart(5)}  ${vals.map((v) => fmt(v).padStart(8)).join(' ')}   ${fmt(r.partsMeanMs!.prepare).padStart(7)} ${fmt(r.partsMeanMs!.boot).padStart(4)} ${fmt(r.partsMeanMs!.detect).padStart(6)}`,
      );
    }
  return lines.join('\n');
}
