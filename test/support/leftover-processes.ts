// What a script left running: live processes whose command line names a path (agents name their state directories,
// servers their roots), so a test can check that everything it started has stopped.
import { readdirSync, readFileSync } from 'node:fs';

/** `pid command line` of each live process whose command line contains `text`. */
export function processesMentioning(text: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .flatMap((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ');
        return cmd.includes(text) ? [`${p} ${cmd}`] : [];
      } catch {
        return [];
      }
    });
}
