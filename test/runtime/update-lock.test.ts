// Update locks (SPEC §19) with real flock(2) holders: a component's `flock`, the agent's lock taken beside it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tryUpdateLock, waitUpdateLock } from '../../src/runtime/update-lock.js';

/** A component holding the lock until killed; resolves once it holds it. */
async function holder(file: string): Promise<ChildProcess> {
  // Its own process group: flock's child (the shell, then sleep) holds the lock too, and goes with the group.
  const child = spawn('flock', ['-x', file, '-c', 'echo held; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return child;
}

/** The holder and what it runs: a component that exits lets go of its lock. */
function kill(c: ChildProcess): void {
  try {
    process.kill(-c.pid!, 'SIGKILL');
  } catch {
    c.kill('SIGKILL');
  }
}

/** Whether someone else could take it now. */
const free = (file: string) => spawnSync('flock', ['-n', file, 'true']).status === 0;

describe('update locks (flock)', () => {
  let dir: string;
  let file: string;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ks-lock-'));
    file = join(dir, 'update.lock');
  });
  afterEach(() => {
    for (const c of children.splice(0)) kill(c);
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes a free lock, holds it against others, and lets go', async () => {
    const lock = await tryUpdateLock(file);
    expect(lock).toBeDefined();
    expect(free(file)).toBe(false);
    await lock!.release();
    expect(free(file)).toBe(true);
  });

  it('says when a component holds it, and waits for the moment it lets go', async () => {
    const component = await holder(file);
    children.push(component);
    expect(await tryUpdateLock(file)).toBeUndefined();
    let got = false;
    const waiting = waitUpdateLock(file).then((l) => ((got = true), l));
    // Still held: the wait has not ended (it ends on the release, below, not on a timer).
    expect(await Promise.race([waiting.then(() => 'got'), new Promise((r) => setImmediate(() => r('waiting')))])).toBe('waiting');
    expect(got).toBe(false);
    kill(component);
    const lock = await waiting;
    expect(free(file)).toBe(false);
    await lock.release();
    expect(free(file)).toBe(true);
  });

  it('stops waiting when told to, and the lock stays the component\'s', async () => {
    children.push(await holder(file));
    const ac = new AbortController();
    const waiting = waitUpdateLock(file, ac.signal);
    ac.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'KS_UPDATE_LOCK' });
    expect(free(file)).toBe(false);
  });

  it('a lock the agent held goes with the agent (its holder reads end of file)', async () => {
    // The built module (npm test builds dist/ first), in a process of its own that is then killed as the agent may be.
    const agent = spawn(process.execPath, ['--input-type=module', '-e', `import { tryUpdateLock } from ${JSON.stringify(new URL('../../dist/runtime/update-lock.js', import.meta.url).href)}; await tryUpdateLock(${JSON.stringify(file)}); console.log('held'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(agent);
    await new Promise<void>((resolve) => agent.stdout!.once('data', () => resolve()));
    expect(free(file)).toBe(false);
    agent.kill('SIGKILL');
    const deadline = Date.now() + 10_000;
    while (!free(file) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(free(file)).toBe(true);
  });
});
