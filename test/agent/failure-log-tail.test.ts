// A failure report's last log lines (SPEC §8, issue 29): bounded (lines, bytes, and what is read of each file),
// stripped of control characters, and never a value the component was given. Real files in a temporary state
// directory, laid out as the agent lays them out (components/<name>/logs/{stdout,stderr}.log).
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { componentPaths } from '../../src/agent/agent.js';
import {
  DEFAULT_READ_BYTES,
  failedUnits,
  failureLogTail,
  MAX_LOG_LINE_BYTES,
  type LogTailUnit,
} from '../../src/agent/failure-log-tail.js';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { MAX_LOG_TAIL_BYTES, MAX_LOG_TAIL_LINES } from '../../src/report/commit-status.js';
import { desired } from '../support/state-builder.js';

const stateDirs: string[] = [];
afterAll(() => stateDirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'keystone-logtail-'));
  stateDirs.push(d);
  return d;
}

/** Writes a unit's logs as the agent keeps them; returns its log directory. */
function logs(dir: string, name: string, files: { stdout?: string | Buffer; stderr?: string | Buffer }): string {
  const { logDir } = componentPaths(dir, name);
  mkdirSync(logDir, { recursive: true });
  if (files.stdout !== undefined) writeFileSync(join(logDir, 'stdout.log'), files.stdout);
  if (files.stderr !== undefined) writeFileSync(join(logDir, 'stderr.log'), files.stderr);
  return logDir;
}

const unit = (name: string, logDir: string, given: LogTailUnit['given'] = []): LogTailUnit => ({ name, logDir, given });
const bytesOf = (lines: readonly string[]) => lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
const numbered = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `line ${i + from}`).join('\n') + '\n';

describe('the failure log tail', () => {
  it('21 lines: the last 20, oldest first, each `<component>: <text>`', () => {
    const dir = stateDir();
    const tail = failureLogTail([unit('api', logs(dir, 'api', { stdout: numbered(21) }))]);
    expect(tail).toHaveLength(MAX_LOG_TAIL_LINES);
    expect(tail[0]).toBe('api: line 2');
    expect(tail.at(-1)).toBe('api: line 21');
  });

  it('3 KB of lines: at most 2 KB in all (each line and its newline), the newest kept whole', () => {
    const dir = stateDir();
    const lines = Array.from({ length: 12 }, (_, i) => `${String(i).padStart(2, '0')} ${'x'.repeat(250)}`);
    expect(Buffer.byteLength(lines.join('\n'))).toBeGreaterThan(3000);
    const tail = failureLogTail([unit('api', logs(dir, 'api', { stderr: lines.join('\n') + '\n' }))]);
    expect(bytesOf(tail)).toBeLessThanOrEqual(MAX_LOG_TAIL_BYTES);
    expect(tail.at(-1)).toMatch(/^api: 11 x+/);
    // Each line is held to MAX_LOG_LINE_BYTES (one long line must not take every other's place), cut with a marker.
    for (const l of tail) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(MAX_LOG_LINE_BYTES);
    expect(tail.at(-1)).toContain('[cut: ');
    expect(tail.length).toBeGreaterThanOrEqual(7);
  });

  it('control characters are stripped: colours and other escape sequences whole, BEL, NUL; a tab is a space; a progress bar shows what was drawn last', () => {
    const dir = stateDir();
    const out = [
      '\x1b[31;1mERROR\x1b[0m listen EADDRINUSE',
      '\x1b]0;window title\x07after the title',
      '\x9b2Kc1 csi\x07 bell\x00nul',
      'key:\tvalue',
      'progress 10%\rprogress 50%\rprogress 100%\r',
      '\x1b[2J\x1b[H',
      '   ',
    ].join('\n');
    const tail = failureLogTail([unit('web', logs(dir, 'web', { stdout: out + '\n' }))]);
    expect(tail).toEqual([
      'web: ERROR listen EADDRINUSE',
      'web: after the title',
      'web: c1 csi bellnul',
      'web: key: value',
      'web: progress 100%',
    ]);
    for (const l of tail) expect(l).not.toMatch(/\p{Cc}/u);
  });

  it('a value the component was given that it prints is scrubbed: plain, split by an escape sequence, across lines, and cut at the end of an unfinished line', () => {
    const dir = stateDir();
    const SECRET = 'hunter2-5f1c9e2a7d';
    const given = [
      { label: '[config:token]', value: SECRET },
      { label: '[env:CERT]', value: 'MIIBkTCB+wIJAK\nZC9fHDzAeFw0y' },
    ];
    const out = [
      `using token ${SECRET}`,
      `colored \x1b[1mhunter2-5f1c\x1b[0m9e2a7d`,
      'MIIBkTCB+wIJAK',
      'ZC9fHDzAeFw0y',
      `cut short: ${SECRET.slice(0, 9)}`,
    ].join('\n');
    const tail = failureLogTail([unit('leaky', logs(dir, 'leaky', { stderr: out }), given)]);
    expect(tail).toEqual([
      'leaky: using token [config:token]',
      'leaky: colored [config:token]',
      'leaky: [env:CERT]',
      'leaky: [env:CERT]',
      'leaky: cut short: [config:token]',
    ]);
    expect(tail.join('\n')).not.toContain('hunter2');
  });

  it('a 50 MB log: only its end is read (bytes read, not time), and the line the read starts inside is dropped', () => {
    const dir = stateDir();
    const logDir = logs(dir, 'big', { stdout: '' });
    const path = join(logDir, 'stdout.log');
    // 50 MB without writing 50 MB: a sparse file, then real lines at its end.
    writeFileSync(path, 'first line, never read\n');
    truncateSync(path, 50 * 1024 * 1024);
    appendFileSync(path, `\n${'y'.repeat(DEFAULT_READ_BYTES)}\n${numbered(5)}`);
    let read = 0;
    const tail = failureLogTail([unit('big', logDir)], { onRead: (_p, n) => (read += n) });
    expect(read).toBeLessThanOrEqual(DEFAULT_READ_BYTES + 1);
    // The y line began before what was read: a piece of a line is not published.
    expect(tail).toEqual(['big: line 1', 'big: line 2', 'big: line 3', 'big: line 4', 'big: line 5']);
  });

  it("stdout and stderr: the file written last comes last; several units share the budget from each one's end", () => {
    const dir = stateDir();
    const a = logs(dir, 'a', { stdout: numbered(30, 100), stderr: 'a failed: boom\n' });
    const b = logs(dir, 'b', { stdout: numbered(30, 200), stderr: 'b says why\n' });
    // a's stderr older than its stdout; b's the other way round.
    utimesSync(join(a, 'stderr.log'), 1000, 1000);
    utimesSync(join(a, 'stdout.log'), 2000, 2000);
    utimesSync(join(b, 'stdout.log'), 1000, 1000);
    utimesSync(join(b, 'stderr.log'), 2000, 2000);
    const tail = failureLogTail([unit('a', a), unit('b', b)]);
    expect(tail).toHaveLength(MAX_LOG_TAIL_LINES);
    expect(tail.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `a: line ${120 + i}`));
    expect(tail.slice(10)).toEqual([...Array.from({ length: 9 }, (_, i) => `b: line ${221 + i}`), 'b: b says why']);
    // A unit whose log cannot be read gives nothing, and takes nothing of the others' budget.
    expect(failureLogTail([unit('gone', join(dir, 'nope')), unit('b', b)]).at(-1)).toBe('b: b says why');
  });

  it('the failed names: a unit, a composite by its members, and a name nobody knows left out; every value of a name is scrubbed', () => {
    const state = desired([{ name: 'api', env: { API_KEY: 'k-91f2c3d4e5' } }, { name: 'web' }]);
    const [api, web] = state.components as [DesiredComponent, DesiredComponent];
    const member = { ...web, name: 'app/web', group: 'app', member: 'web' };
    // After a composite's rollback the same unit runs with what it was given before: both are scrubbed.
    const before = { ...api, inputs: { 'config.token': 'old-token-3141' } };
    const units = failedUnits(['api', 'app', 'ghost'], [api, member, before], (n) => `/logs/${n}`);
    expect(units.map((u) => [u.name, u.logDir])).toEqual([
      ['api', '/logs/api'],
      ['app/web', '/logs/app/web'],
    ]);
    expect(units[0]!.given.map((g) => g.value)).toEqual(expect.arrayContaining(['k-91f2c3d4e5', 'old-token-3141']));
  });
});
