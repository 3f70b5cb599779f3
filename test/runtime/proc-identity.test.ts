import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import {
  isAlive,
  isSameProcess,
  parseProcStat,
  processStartTime,
  readProcStat,
} from '../../src/runtime/proc-identity.js';
import { GroupReaper, waitFor } from './runtime-fixtures.js';

const reaper = new GroupReaper();
afterEach(() => reaper.killAll());

// Field 22 is the 20th field after the comm's closing parenthesis.
const statLine = (comm: string, startTime: string, state = 'S') =>
  `4242 (${comm}) ${state} 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 ${startTime} 1000000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0`;

describe('parseProcStat', () => {
  it('splits at the last ")" so a comm with spaces and parentheses cannot shift the fields', () => {
    const st = parseProcStat(statLine('evil) (name x', '987654'));
    expect(st).toMatchObject({
      pid: 4242,
      comm: 'evil) (name x',
      state: 'S',
      ppid: 1,
      pgrp: 4242,
      session: 4242,
      startTime: '987654',
    });
  });

  it('refuses malformed text', () => {
    expect(parseProcStat('garbage')).toBeUndefined();
    expect(parseProcStat('1 (x) S 1 2')).toBeUndefined();
  });
});

describe('process identity on real processes', () => {
  it('reads the start time of a live process, and a wrong start time is another process', async () => {
    const child = spawn('sh', ['-c', 'exec sleep 30'], { detached: true, stdio: 'ignore' });
    reaper.add(child.pid!);
    const start = processStartTime(child.pid!);
    expect(start).toMatch(/^\d+$/);
    expect(isSameProcess(child.pid!, start!)).toBe(true);
    // A reused pid: same number, another start time.
    expect(isSameProcess(child.pid!, String(BigInt(start!) + 1n))).toBe(false);
    expect(isSameProcess(child.pid!, '')).toBe(false);
    expect(isAlive(child.pid!)).toBe(true);
  });

  it('parses the live stat of a process whose comm contains ") ("', async () => {
    // A shell renames itself (exec would reset comm) and stays alive.
    const shell = spawn('sh', ['-c', 'printf "a) (b" > /proc/self/comm; sleep 30'], {
      detached: true,
      stdio: 'ignore',
    });
    reaper.add(shell.pid!);
    const st = await waitFor(() => {
      const s = readProcStat(shell.pid!);
      return s?.comm === 'a) (b' ? s : undefined;
    }, 'the comm to change');
    // Running, sleeping, or waiting on the disk while it starts `sleep` (seen in CI): one letter, parsed.
    expect(st.state).toMatch(/^[RSD]$/);
    expect(st.pgrp).toBe(shell.pid);
    expect(st.startTime).toBe(processStartTime(shell.pid!));
  });

  it('a process that does not exist has no start time and is not alive', () => {
    expect(processStartTime(2 ** 22 + 12345)).toBeUndefined();
    expect(isAlive(2 ** 22 + 12345)).toBe(false);
    expect(isSameProcess(-1, '1')).toBe(false);
  });

  it('treats a zombie as dead while it still has a start time', async () => {
    // The background sleep exits; its parent has become `sleep 30` by exec and never reaps it.
    const child = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    reaper.add(child.pid!);
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
    const zombie = Number(chunk.toString().trim());
    await waitFor(() => readProcStat(zombie)?.state === 'Z', 'the zombie');
    expect(processStartTime(zombie)).toMatch(/^\d+$/);
    expect(isAlive(zombie)).toBe(false);
  });
});
