// The supervision bench's tables: the supervisors side by side (ratios against Keystone), a restart's parts, the summary.
import { fmt, ratio } from '../lib/stats.js';
import type { Row } from './measure.js';
import { BURST, MiB, N } from './options.js';

export function table(rows: Row[], skips: { key: string; why: string }[]): string {
  const ref = rows.find((r) => r.key === 'keystone') ?? rows[0]!;
  const lines: string[] = [];
  const head = `${'supervisor'.padEnd(26)} ${'restart ms'.padStart(10)} ${'(min–max)'.padStart(13)} ${'÷ks'.padStart(6)} │ ${`${BURST} at once: last`.padStart(17)} ${'÷ks'.padStart(6)} │ ${'RSS MiB'.padStart(7)} ${'÷ks'.padStart(6)} │ ${'idle CPU %'.padStart(10)} ${'÷ks'.padStart(7)} │ ${`${N} programs' RSS MiB`.padStart(20)}`;
  lines.push(head);
  lines.push('─'.repeat(head.length));
  for (const r of rows) {
    const rs = r.restart;
    lines.push(
      [
        `${r.label}${r.version ? ` ${r.version}` : ''}`.padEnd(26),
        (rs ? fmt(rs.medianMs) : '—').padStart(10),
        (rs ? `(${fmt(rs.minMs)}–${fmt(rs.maxMs)})` : '').padStart(13),
        (rs && ref.restart ? ratio(rs.medianMs, ref.restart.medianMs) : '').padStart(6),
        '│',
        (r.burst ? fmt(r.burst.lastMs) : '—').padStart(17),
        (r.burst && ref.burst ? ratio(r.burst.lastMs, ref.burst.lastMs) : '').padStart(6),
        '│',
        fmt(MiB(r.rssKiB!), 1).padStart(7),
        ratio(r.rssKiB, ref.rssKiB).padStart(6),
        '│',
        fmt(r.idleCpuPercent, 2).padStart(10),
        ratio(r.idleCpuPercent, ref.idleCpuPercent).padStart(7),
        '│',
        fmt(MiB(r.programsRssKiB!), 0).padStart(20),
      ].join(' '),
    );
  }
  for (const s of skips) lines.push(`${s.key.padEnd(26)} skipped: ${s.why}`);
  return lines.join('\n');
}

export function partsTable(rows: Row[]): string {
  const lines: string[] = [];
  const head = `${'restart, medians in ms'.padEnd(26)} ${'kill → new node'.padStart(15)} ${'(delay + beyond)'.padStart(17)} ${'node boot'.padStart(9)} ${'→ listening'.padStart(11)} ${'→ seen'.padStart(7)} │ ${'total'.padStart(6)}`;
  lines.push(head);
  lines.push('─'.repeat(head.length));
  for (const r of rows) {
    const p = r.restart?.parts;
    if (!p) continue;
    lines.push(
      `${r.label.padEnd(26)} ${fmt(p.toNodeMs, 1).padStart(15)} ${`(${fmt(r.restart!.restartDelayMs)} + ${fmt(r.restart!.spawnOverheadMs, 1)})`.padStart(17)} ${fmt(p.bootMs, 1).padStart(9)} ${fmt(p.toListenMs, 1).padStart(11)} ${fmt(p.toSeenMs, 1).padStart(7)} │ ${fmt(r.restart!.medianMs, 1).padStart(6)}`,
    );
    if (p.toExitLoggedMs !== undefined)
      lines.push(
        `${''.padEnd(26)}   from the agent's log: kill → exit logged ${fmt(p.toExitLoggedMs, 1)}, exit logged → state=starting logged ${fmt(p.exitToStartingMs, 1)} (100 ms of it is the first-restart delay of SPEC §5)`,
      );
  }
  return lines.join('\n');
}

/** The four figures side by side: daemon RSS, idle CPU without and with probes, crash → the new process exists. */
export function summaryTable(rows: Row[]): string {
  const probed = rows.find((r) => r.key === 'keystone-probed');
  const lines: string[] = [];
  const head = `${'supervisor'.padEnd(26)} ${'daemon RSS MiB'.padStart(14)} ${'idle CPU %'.padStart(10)} ${'idle CPU %, tcp /10 s'.padStart(21)} ${'crash → new process ms'.padStart(22)} ${'(delay + beyond, p50)'.padStart(22)}`;
  lines.push(head);
  lines.push('─'.repeat(head.length));
  for (const r of rows.filter((x) => x.key !== 'keystone-probed')) {
    const rs = r.restart;
    lines.push(
      [
        `${r.label}${r.version ? ` ${r.version}` : ''}`.padEnd(26),
        fmt(MiB(r.rssKiB!), 1).padStart(14),
        fmt(r.idleCpuPercent, 2).padStart(10),
        (r.key === 'keystone' && probed ? fmt(probed.idleCpuPercent, 2) : 'no probes').padStart(21),
        fmt(rs?.parts?.toNodeMs, 1).padStart(22),
        (rs ? `(${fmt(rs.restartDelayMs)} + ${fmt(rs.spawnOverheadMs, 1)})` : '').padStart(22),
      ].join(' '),
    );
  }
  return lines.join('\n');
}
