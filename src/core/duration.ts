// Go-style durations (`200ms`, `10s`, `2m0s`, `1h30m`), the format operators know from Docker and Flux.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/** Parses a Go duration into milliseconds, or returns undefined when it is not one. Negative durations are refused: no timeout or interval can be negative. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (text.length === 0 || text.length > 64) return undefined;
  let pos = 0;
  let total = 0;
  PART.lastIndex = 0;
  while (pos < text.length) {
    PART.lastIndex = pos;
    const m = PART.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2] as string]!;
    pos = PART.lastIndex;
  }
  return Number.isFinite(total) ? total : undefined;
}

/** Formats milliseconds the way Go's time.Duration.String does: `2m0s`, `1h0m0s`, `1.5s`, `200ms`, `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (abs < 1) {
    const us = abs * 1000;
    return us >= 1 ? `${sign}${trim(us)}µs` : `${sign}${trim(us * 1000)}ns`;
  }
  if (abs < 1000) return `${sign}${trim(abs)}ms`;
  const h = Math.floor(abs / 3_600_000);
  const m = Math.floor((abs % 3_600_000) / 60_000);
  const s = (abs % 60_000) / 1000;
  if (h > 0) return `${sign}${h}h${m}m${trim(s)}s`;
  if (m > 0) return `${sign}${m}m${trim(s)}s`;
  return `${sign}${trim(s)}s`;
}

function trim(n: number): string {
  // Go prints the shortest exact decimal; rounding to 9 places avoids float noise like 1.5000000000000002.
  return String(Math.round(n * 1e9) / 1e9);
}
