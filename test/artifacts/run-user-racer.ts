// A process of a component's run user (uid 65534) attacking its own work directory while the root agent
// installs into it: it swaps directories for links to a target, again and again, as fast as it can.
import { spawn, type ChildProcess } from 'node:child_process';

/** setpriv's options for the run user of these tests: nobody, no supplementary groups. */
export const RUN_USER_SETPRIV = ['--reuid=65534', '--regid=65534', '--clear-groups', '--'];

export interface Racer {
  /** Still swapping (it never stops on its own while its parent lives). */
  running(): boolean;
  /** Kills it (SIGKILL) and waits until it is gone; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts the racer in `cwd` (as the run user) once it is swapping: each path of `swapped` (relative to `cwd`)
 * is renamed away, replaced by a symlink to `target`, and put back, in a loop.
 */
export async function startRacer(cwd: string, target: string, swapped: readonly string[]): Promise<Racer> {
  const child: ChildProcess = spawn('setpriv', [...RUN_USER_SETPRIV, process.execPath, '-e', RACER, target, ...swapped], {
    cwd,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`racer exited before it started (${code})`)));
  });
  return {
    running,
    stop: async () => {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The racer program: argv is the link target, then the paths to swap. */
const RACER = `
const fs = require('fs');
const [target, ...swapped] = process.argv.slice(1);
const parent = process.ppid;
const swap = (p) => {
  try { fs.renameSync(p, p + '.x'); } catch {}
  try { fs.symlinkSync(target, p); } catch {}
  try { fs.unlinkSync(p); } catch {}
  try { fs.renameSync(p + '.x', p); } catch {}
};
process.stdout.write('ready\\n');
// Bounded by its parent: should the test process die, the racer ends on its own.
for (let n = 0; ; n++) {
  for (const p of swapped) swap(p);
  if (n % 1000 === 0 && process.ppid !== parent) process.exit(0);
}
`;
