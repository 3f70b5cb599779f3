// "3 min ago", kept current by one shared 15-second tick rather than a timer per cell.
import { useEffect, useState } from 'preact/hooks';

const TICK_MS = 15_000;
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;

/** Re-renders the caller every ~15 s; the caller reads Date.now() itself, so a fresh answer is never shown stale. */
export function useTick(): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    timer ??= setInterval(() => listeners.forEach((l) => l()), TICK_MS);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  }, []);
}

export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const s = Math.round((now - then) / 1000);
  // A time slightly ahead is the two clocks disagreeing, not the future.
  if (s < 10) return s < -60 ? `in ${relativeSpan(-s)}` : 'just now';
  return `${relativeSpan(s)} ago`;
}

function relativeSpan(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Local time, to the second, the same layout in every locale: `2026-05-01 10:00:03`. */
export function localTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function duration(fromIso: string | null, toIso: string | null): string | undefined {
  if (!fromIso || !toIso) return undefined;
  const ms = Date.parse(toIso) - Date.parse(fromIso);
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
