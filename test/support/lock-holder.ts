// Someone holding an update lock (SPEC §19) with util-linux's flock, as a component's job or an operator's shell does.
import { spawn, type ChildProcess } from 'node:child_process';

/** Holds `file`'s lock until let go; resolves once it holds it. Its own process group: the lock goes with all of it. */
export async function holdLock(file: string): Promise<ChildProcess> {
  const child = spawn('flock', ['-x', file, '-c', 'echo held; exec sleep 600'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return child;
}

/** Lets go (the holder and what it runs are killed): as a component that exits lets go of its lock. */
export function letGo(c: ChildProcess): void {
  try {
    process.kill(-c.pid!, 'SIGKILL');
  } catch {
    c.kill('SIGKILL');
  }
}
