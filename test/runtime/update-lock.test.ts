// Update locks (SPEC §19) with real flock(2) holders: a component's `flock`, the agent's lock taken beside it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tryUpdateLock, waitUpdateLock } from '../../src/runtime/update-lock.js';
import { holdLock, letGo } from '../support/lock-holder.js';

/** Whether someone else could take it now. */
const free = (file: string) => spawnSync('flock', ['-n', file, 'true']).status === 0;

describe('update locks (flock)', () => {
  let dir: string;
  let file: string;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ks-lock-'));
    mkdirSync(join(dir, 'run'));
    file = join(dir, 'run', 'update.lock');
    writeFileSync(file, '');
  });
  afterEach(() => {
    for (const c of children.splice(0)) letGo(c);
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes a free lock, holds it against others, and lets go', async () => {
    const lock = await tryUpdateLock(dir, 'run/update.lock');
    if (!lock || lock === 'held') throw new Error(`not taken: ${lock}`);
    expect(free(file)).toBe(false);
    await lock.release();
    expect(free(file)).toBe(true);
  });

  it('says when a component holds it, and waits for the moment it lets go', async () => {
    const component = await holdLock(file);
    children.push(component);
    expect(await tryUpdateLock(dir, 'run/update.lock')).toBe('held');
    let got = false;
    const waiting = waitUpdateLock(dir, 'run/update.lock').then((l) => ((got = true), l));
    // Still held: the wait has not ended (it ends on the release, below, not on a timer).
    expect(await Promise.race([waiting.then(() => 'got'), new Promise((r) => setImmediate(() => r('waiting')))])).toBe(
      'waiting',
    );
    expect(got).toBe(false);
    letGo(component);
    const lock = await waiting;
    expect(free(file)).toBe(false);
    await lock!.release();
    expect(free(file)).toBe(true);
  });

  it("stops waiting when told to, and the lock stays the component's", async () => {
    children.push(await holdLock(file));
    const ac = new AbortController();
    const waiting = waitUpdateLock(dir, 'run/update.lock', ac.signal);
    ac.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'KS_UPDATE_LOCK' });
    expect(free(file)).toBe(false);
  });

  it('a lock the agent held goes with the agent (its descriptor closes with it)', async () => {
    // The built module (npm test builds dist/ first), in a process of its own that is then killed as the agent may be.
    const agent = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { tryUpdateLock } from ${JSON.stringify(new URL('../../dist/runtime/update-lock.js', import.meta.url).href)}; await tryUpdateLock(${JSON.stringify(dir)}, 'run/update.lock'); console.log('held'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(agent);
    await new Promise<void>((resolve) => agent.stdout!.once('data', () => resolve()));
    expect(free(file)).toBe(false);
    agent.kill('SIGKILL');
    const deadline = Date.now() + 10_000;
    while (!free(file) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(free(file)).toBe(true);
  });

  it('a lock file that is not there is held by nobody, and the agent creates none', async () => {
    expect(await tryUpdateLock(dir, 'run/other.lock')).toBeUndefined();
    expect(await tryUpdateLock(dir, 'nothere/update.lock')).toBeUndefined();
    expect(await waitUpdateLock(dir, 'run/other.lock')).toBeUndefined();
    expect(
      spawnSync('ls', [join(dir, 'run')])
        .stdout.toString()
        .trim(),
    ).toBe('update.lock');
  });

  it('never follows a link or opens a FIFO the component put there (the agent is root; the work directory is not)', async () => {
    rmSync(file);
    symlinkSync('/etc/hostname', file);
    await expect(tryUpdateLock(dir, 'run/update.lock')).rejects.toMatchObject({
      code: 'KS_UPDATE_LOCK',
      message: expect.stringContaining('symbolic link'),
    });
    rmSync(file);
    spawnSync('mkfifo', [file]);
    await expect(tryUpdateLock(dir, 'run/update.lock')).rejects.toMatchObject({
      code: 'KS_UPDATE_LOCK',
      message: expect.stringContaining('not a regular file'),
    });
    // A device node (a container may make one where its lock goes): named, never opened (a watchdog would arm).
    // Only root makes one (the agent runs as root where this matters).
    if (process.getuid?.() === 0) {
      rmSync(file);
      expect(spawnSync('mknod', [file, 'c', '1', '3']).status).toBe(0);
      await expect(tryUpdateLock(dir, 'run/update.lock')).rejects.toMatchObject({
        code: 'KS_UPDATE_LOCK',
        message: expect.stringContaining('not a regular file'),
      });
    }
    rmSync(join(dir, 'run'), { recursive: true });
    symlinkSync('/etc', join(dir, 'run'));
    await expect(tryUpdateLock(dir, 'run/hostname')).rejects.toMatchObject({
      code: 'KS_UPDATE_LOCK',
      message: expect.stringContaining('is not a directory'),
    });
  });
});
