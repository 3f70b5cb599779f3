// One builder at a time across test files (vitest runs them in parallel workers): an exclusive lock file, the others
// polling with a deadline until the builder is done. A lock older than `staleMs` was left by a killed run.
import { constants } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';

export async function withFileLock(
  path: string,
  opts: { staleMs: number; timeoutMs: number },
  isDone: () => boolean | Promise<boolean>,
  build: () => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (await isDone()) return;
    const lock = await tryLock(path, opts.staleMs);
    if (lock) {
      try {
        if (!(await isDone())) await build();
        return;
      } finally {
        await lock.close();
        await rm(path, { force: true });
      }
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for another test file's build (lock ${path})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function tryLock(path: string, staleMs: number) {
  try {
    return await open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const st = await stat(path).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > staleMs) await rm(path, { force: true });
    return undefined;
  }
}
