// Someone holding an update lock (SPEC §19) with util-linux's flock, as a component's job or an operator's shell does.
import { spawn, type ChildProcess } from 'node:child_process';
import type { ComponentSpec } from './stack-fixture.js';

/** Holds `file`'s lock until let go; resolves once it holds it. Its own process group: the lock goes with all of it. */
export async function holdLock(file: string, timeoutMs = 30_000): Promise<ChildProcess> {
  const child = spawn('flock', ['-x', file, '-c', 'echo held; exec sleep 3600'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  // A flock that fails or never gets the lock must fail the test, not hold it (and CI) for ever.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      letGo(child);
      reject(new Error(`could not take the lock of ${file} within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout!.once('data', () => (clearTimeout(timer), resolve()));
    child.once(
      'exit',
      (code) => (clearTimeout(timer), reject(new Error(`flock ${file} exited ${code} before holding it`))),
    );
  });
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

/**
 * A process component with an update lock (`run/update.lock`): it makes its lock file, and on SIGTERM writes to
 * `run/at-stop` whether it could take its own lock then (`busy`: the agent holds it while it stops the component).
 */
export function lockedComponent(
  name: string,
  timeout?: string,
  dependencies: ComponentSpec['dependencies'] = [],
): ComponentSpec {
  const script = [
    'mkdir -p run && : >> run/update.lock',
    `trap 'if flock -n run/update.lock true; then echo free > run/at-stop; else echo busy > run/at-stop; fi; exit 0' TERM`,
    'while :; do sleep 0.1; done',
  ].join('\n');
  return {
    name,
    version: '1.0.0',
    command: 'sh',
    args: ['-c', script],
    updateLock: { lock: 'run/update.lock', ...(timeout !== undefined && { timeout }) },
    dependencies,
  };
}
