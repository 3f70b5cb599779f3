// The mount table (/proc/self/mounts): which file system a path is on, for secrets-root.ts to tell a tmpfs from a
// disk. Apart because it is a parser of the kernel's text and knows nothing of secrets.
import { readFileSync, realpathSync } from 'node:fs';

export interface Mount {
  mountPoint: string;
  fstype: string;
  options: string[];
}

/** The entries of /proc/self/mounts, in order; spaces and other characters in paths are octal escapes there (\040). */
export function parseMounts(text: string): Mount[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 4) continue;
    out.push({ mountPoint: unescape(f[1]!), fstype: f[2]!, options: f[3]!.split(',') });
  }
  return out;
}

/** The mount `path` is on: the longest mount point that contains it (the last one mounted, where several are stacked). */
export function mountOf(mounts: readonly Mount[], path: string): Mount | undefined {
  let best: Mount | undefined;
  for (const m of mounts) {
    const inside = m.mountPoint === '/' || path === m.mountPoint || path.startsWith(`${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

export function readMounts(): string {
  try {
    return readFileSync('/proc/self/mounts', 'utf8');
  } catch {
    return '';
  }
}

export function realOrSame(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path; // not created yet: the path itself
  }
}
