// The apply-dry bench's measures, their summary by size (medians, per component, against the parse floor) and its table.
import { median } from './timing.js';

export type MeasureKey = 'applyDry' | 'unsigned' | 'pipeline' | 'floor' | 'parse' | 'resolve' | 'core' | 'cold';

export const MEASURES: [MeasureKey, string][] = [
  ['applyDry', 'apply-dry --json, in-process'],
  ['unsigned', '  the same, --allow-unsigned'],
  ['pipeline', 'pipeline in-process (load+diff+json)'],
  ['floor', 'parse floor (read + smol-toml)'],
  ['parse', '  stage: parsePlan + parseRecipe'],
  ['resolve', '  stage: resolveDesiredState'],
  ['core', 'core diff (1% bumped)'],
  ['cold', 'apply-dry, cold child process'],
];

/** The figures of one size, every run of each measure. */
export interface RawSize {
  n: number;
  cli: boolean;
  layers: number;
  edges: number;
  hardEdges: number;
  bumped: number;
  diffRestarts: number;
  diffStops: number;
  outputBytes: number;
  runs: number;
  measures: Partial<Record<MeasureKey, number[]>>;
  cpuMs: Record<string, number[]>;
}

export interface MeasureSummary {
  runsMs: number[];
  medianMs: number;
  usPerComponent: number;
  ratioToFloor: number;
  cpuMedianMs?: number;
  cpuUsPerComponent?: number;
}

export type SizeSummary = Omit<RawSize, 'measures' | 'cpuMs'> & {
  measures: Partial<Record<MeasureKey, MeasureSummary>>;
};

export function summarise(raw: RawSize[]): SizeSummary[] {
  return raw.map((s) => {
    const floor = median(s.measures.floor!);
    const measures: Partial<Record<MeasureKey, MeasureSummary>> = {};
    for (const [key] of MEASURES) {
      if (!s.measures[key]) continue;
      const ms = median(s.measures[key]!);
      const cpu = s.cpuMs[key];
      measures[key] = {
        runsMs: s.measures[key]!.map((x) => +x.toFixed(3)),
        medianMs: +ms.toFixed(3),
        usPerComponent: +((ms * 1000) / s.n).toFixed(3),
        ratioToFloor: +(ms / floor).toFixed(3),
        ...(cpu && {
          cpuMedianMs: +median(cpu).toFixed(3),
          cpuUsPerComponent: +((median(cpu) * 1000) / s.n).toFixed(3),
        }),
      };
    }
    const { measures: _raw, cpuMs: _cpu, ...rest } = s;
    return { ...rest, measures };
  });
}

export const fmt = (x: number, d = 1): string =>
  x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
export const count = (x: number): string => x.toLocaleString('en-US');

/** Every size side by side (— where a measure did not run at that size), then per-component growth from the smallest to the largest N. */
export function table(summary: SizeSummary[], growth: Partial<Record<MeasureKey, number>>): string {
  const small = summary[0]!;
  const large = summary[summary.length - 1]!;
  const cols = summary;
  const w = 37;
  const cell = (m: MeasureSummary | undefined) =>
    m
      ? `${fmt(m.medianMs).padStart(9)} ${fmt(m.usPerComponent).padStart(8)} ${`×${fmt(m.ratioToFloor, 2)}`.padStart(8)}`
      : `${'—'.padStart(9)} ${''.padStart(8)} ${''.padStart(8)}`;
  const lines: string[] = [];
  lines.push(
    `${''.padEnd(w)} ${cols.map((c) => `N = ${count(c.n)}`.padStart(17).padEnd(27)).join(' │ ')}${cols.length > 1 ? ' │ per-comp' : ''}`,
  );
  lines.push(
    `${'measure'.padEnd(w)} ${cols.map(() => `${'total ms'.padStart(9)} ${'µs/comp'.padStart(8)} ${'÷floor'.padStart(8)}`).join(' │ ')}${cols.length > 1 ? ` │ ${count(large.n)}/${count(small.n)}` : ''}`,
  );
  lines.push('─'.repeat(w + 1 + cols.length * 30 + (cols.length > 1 ? 16 : 0)));
  for (const [key, label] of MEASURES) {
    if (!cols.some((c) => c.measures[key])) continue;
    const row = `${label.padEnd(w)} ${cols.map((c) => cell(c.measures[key])).join(' │ ')}`;
    lines.push(
      cols.length > 1
        ? `${row} │ ${growth[key] === undefined ? '—'.padStart(8) : fmt(growth[key]!, 2).padStart(8)}`
        : row,
    );
  }
  return lines.join('\n');
}
