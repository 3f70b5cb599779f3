// keystonectl logs on real files in a state directory: the last lines, stderr, unknown components, and --follow
// through appends, partial lines, copy-then-truncate rotation (the agent's) and replacement.
import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rotateIfLarger } from '../../../src/runtime/log-files.js';
import { runCtl } from '../../support/cli-run.js';
import { startCtl } from './live-run.js';

let stateDir: string;
let logDir: string;
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'keystonectl-logs-'));
  logDir = join(stateDir, 'components', 'web', 'logs');
  mkdirSync(logDir, { recursive: true });
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

const numbered = (from: number, to: number, prefix = 'line') =>
  Array.from({ length: to - from + 1 }, (_, i) => `${prefix} ${from + i}\n`).join('');
const logs = (...args: string[]) => runCtl(['logs', ...args, '--state-dir', stateDir], '/');

describe('keystonectl logs', () => {
  it('prints the last N lines of stdout (50 by default)', async () => {
    writeFileSync(join(logDir, 'stdout.log'), numbered(1, 120));
    expect(await logs('web', '--lines', '5')).toEqual({ code: 0, stdout: numbered(116, 120), stderr: '' });
    expect((await logs('web', '-n', '3')).stdout).toBe(numbered(118, 120));
    expect((await logs('web')).stdout).toBe(numbered(71, 120));
    expect((await logs('web', '--lines', '0')).stdout).toBe('');
  });

  it('--stderr reads stderr.log; a component that has not written anything yet prints nothing', async () => {
    writeFileSync(join(logDir, 'stderr.log'), 'warn: disk 91% full\n');
    expect((await logs('web', '--stderr')).stdout).toBe('warn: disk 91% full\n');
    expect(await logs('web')).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('an unknown component is exit 2, naming the state directory; bad names and values are usage errors', async () => {
    const r = await logs('nope');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `no component "nope" on this device (no ${join(stateDir, 'components', 'nope', 'logs')}; --state-dir is ${stateDir})`,
    );
    for (const args of [['../web'], ['web', '--lines', '-1'], ['web', '--lines', 'all'], []]) {
      const bad = await logs(...args);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toMatch(/usage: keystonectl logs NAME/);
    }
  });

  it('--follow prints the last lines, then what is appended, a whole line at a time, until stopped', async () => {
    const file = join(logDir, 'stdout.log');
    writeFileSync(file, numbered(1, 10) + 'half a li');
    const run = startCtl(['logs', 'web', '--follow', '--lines', '3', '--state-dir', stateDir]);
    await run.until((o) => o === numbered(8, 10), 'the last 3 complete lines');
    appendFileSync(file, 'ne\n' + numbered(11, 12));
    await run.until((o) => o.endsWith(numbered(11, 12)), 'the appended lines');
    expect(run.stdout()).toBe(numbered(8, 10) + 'half a line\n' + numbered(11, 12));
    appendFileSync(file, 'unterminated');
    const r = await run.stop();
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(numbered(8, 10) + 'half a line\n' + numbered(11, 12) + 'unterminated\n');
  });

  it('--follow survives the agent rotating the file (copy-then-truncate): nothing lost, nothing repeated', async () => {
    const file = join(logDir, 'stdout.log');
    writeFileSync(file, numbered(1, 5));
    const run = startCtl(['logs', 'web', '--follow', '--lines', '2', '--state-dir', stateDir]);
    await run.until((o) => o === numbered(4, 5), 'the tail');
    // Lines the follower has not read yet when the rotation happens are found in the copy, stdout.log.1.
    appendFileSync(file, numbered(6, 8));
    expect(await rotateIfLarger(file, 10, 3)).toBe(true);
    appendFileSync(file, numbered(9, 10));
    await run.until((o) => o.endsWith(numbered(9, 10)), 'lines written after the rotation');
    const r = await run.stop();
    expect(r.stdout).toBe(numbered(4, 10));
  });

  it('a rotation between two looks: the unread rest is taken from stdout.log.1, then the new file from its top', async () => {
    const file = join(logDir, 'stdout.log');
    writeFileSync(file, numbered(1, 5));
    // One look, then a long sleep: everything below happens between two looks, and stopping makes the last one.
    const run = startCtl(['logs', 'web', '--follow', '--lines', '2', '--state-dir', stateDir], {
      followPollMs: 60_000,
    });
    await run.until((o) => o === numbered(4, 5), 'the tail');
    appendFileSync(file, numbered(6, 8));
    expect(await rotateIfLarger(file, 10, 3)).toBe(true);
    appendFileSync(file, 'x\n');
    expect((await run.stop()).stdout).toBe(numbered(4, 8) + 'x\n');
  });

  it("an older stdout.log.1 that is not this file's past is not mistaken for it", async () => {
    const file = join(logDir, 'stdout.log');
    writeFileSync(`${file}.1`, numbered(100, 120, 'old'));
    writeFileSync(file, numbered(1, 5));
    const run = startCtl(['logs', 'web', '--follow', '--lines', '1', '--state-dir', stateDir], {
      followPollMs: 60_000,
    });
    await run.until((o) => o === numbered(5, 5), 'the tail');
    truncateSync(file, 0);
    appendFileSync(file, 'y\n');
    expect((await run.stop()).stdout).toBe('line 5\ny\n');
  });

  it('--follow starts again from the top of a file that was replaced or truncated', async () => {
    const file = join(logDir, 'stdout.log');
    writeFileSync(file, numbered(1, 3));
    const run = startCtl(['logs', 'web', '--follow', '--lines', '1', '--state-dir', stateDir]);
    await run.until((o) => o === numbered(3, 3), 'the tail');
    // Replaced (rename rotation): a new inode.
    copyFileSync(file, `${file}.old`);
    renameSync(`${file}.old`, `${file}.1`);
    writeFileSync(`${file}.new`, 'fresh 1\n');
    renameSync(`${file}.new`, file);
    await run.until((o) => o.endsWith('fresh 1\n'), 'the new file');
    // Truncated without a copy (keep = 0): what follows is read from 0.
    truncateSync(file, 0);
    await new Promise((r) => setTimeout(r, 100));
    appendFileSync(file, 'after truncate\n');
    await run.until((o) => o.endsWith('after truncate\n'), 'lines after the truncation');
    const r = await run.stop();
    expect(r.stdout).toBe('line 3\nfresh 1\nafter truncate\n');
  });

  it('--follow on a log that does not exist yet waits for it', async () => {
    const run = startCtl(['logs', 'web', '--follow', '--state-dir', stateDir]);
    await new Promise((r) => setTimeout(r, 60));
    appendFileSync(join(logDir, 'stdout.log'), 'first words\n');
    await run.until((o) => o === 'first words\n', 'the first line');
    expect((await run.stop()).code).toBe(0);
  });
});
