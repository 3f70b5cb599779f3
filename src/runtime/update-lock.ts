// Update locks (SPEC §19, as balena's): a component holds an advisory lock (flock) on a file in its work directory
// while it must not be stopped for a new revision. The agent takes the same lock itself while it stops the
// component, so that the component cannot grab it mid-stop. Node has no flock(2); util-linux's `flock` (on every
// Debian) holds it in a child whose stdin is the agent's: the lock goes when the agent lets go, or dies.
import { spawn } from 'node:child_process';

/** `flock -E`: the exit code that means "held by another" (with -n), told apart from flock's own failures (1). */
const CONFLICT = 75;

export interface HeldUpdateLock {
  readonly file: string;
  /** Lets go of the lock (the holder exits); resolves once it is released. */
  release(): Promise<void>;
}

export class UpdateLockError extends Error {
  readonly code = 'KS_UPDATE_LOCK';
}

/** The lock now, or undefined when another process holds it. */
export function tryUpdateLock(file: string): Promise<HeldUpdateLock | undefined> {
  return hold(file, { wait: false });
}

/** The lock as soon as it is free (the moment its holder lets go, not at a poll); rejects when `signal` aborts. */
export async function waitUpdateLock(file: string, signal?: AbortSignal): Promise<HeldUpdateLock> {
  const held = await hold(file, { wait: true, ...(signal && { signal }) });
  if (!held) throw new UpdateLockError(`${file}: the lock could not be taken`);
  return held;
}

function hold(file: string, o: { wait: boolean; signal?: AbortSignal }): Promise<HeldUpdateLock | undefined> {
  return new Promise((resolve, reject) => {
    // `read` returns when the agent closes stdin (release) or its end of the pipe goes (the agent died).
    const child = spawn('flock', ['-x', ...(o.wait ? [] : ['-n']), '-E', String(CONFLICT), file, '-c', 'echo locked; read _'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let settled = false;
    let stderr = '';
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const onAbort = () => child.kill('SIGTERM');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()).slice(0, 2000));
    child.stdout.on('data', (b: Buffer) => {
      if (settled || !b.toString().includes('locked')) return;
      settled = true;
      o.signal?.removeEventListener('abort', onAbort);
      resolve({
        file,
        release: async () => {
          child.stdin.end();
          await exited;
        },
      });
    });
    child.once('error', (e) => {
      if (settled) return;
      settled = true;
      reject(new UpdateLockError(`${file}: cannot run flock (util-linux): ${e.message}`));
    });
    void exited.then((code) => {
      if (settled) return;
      settled = true;
      o.signal?.removeEventListener('abort', onAbort);
      if (code === CONFLICT) resolve(undefined);
      else if (o.signal?.aborted) reject(new UpdateLockError(`${file}: stopped waiting for the lock`));
      else reject(new UpdateLockError(`${file}: flock exited ${code}: ${stderr.trim()}`));
    });
  });
}
