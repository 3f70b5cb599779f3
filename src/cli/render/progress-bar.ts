// A one-line progress bar for downloads on a terminal; nothing at all when output is not a terminal.
import type { CliIo } from '../io.js';

const WIDTH = 24;

function human(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** The bar as text: `name [#########...........]  38% 1.2 MiB/3.1 MiB`. Pure, for tests. */
export function progressLine(label: string, received: number, total: number | undefined): string {
  if (total === undefined || total <= 0) return `${label} ${human(received)}`;
  const frac = Math.min(1, received / total);
  const filled = Math.round(frac * WIDTH);
  return `${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(frac * 100)).padStart(3)}% ${human(received)}/${human(total)}`;
}

/** Returns a progress callback that redraws at most ten times a second on stderr when it is a terminal. */
export function progressBar(
  io: CliIo,
  label: string,
): { update: (received: number, total: number | undefined) => void; done: () => void } {
  if (!io.stderr.isTTY) return { update: () => undefined, done: () => undefined };
  let last = 0;
  let drawn = false;
  return {
    update(received, total) {
      const now = Date.now();
      if (now - last < 100 && received !== total) return;
      last = now;
      drawn = true;
      io.stderr.write(`\r\x1b[2K${progressLine(label, received, total)}`);
    },
    done() {
      if (drawn) io.stderr.write('\r\x1b[2K');
    },
  };
}
