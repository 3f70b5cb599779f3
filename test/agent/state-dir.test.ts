// The state directory checked whole before the agent trusts it, and its lock (one agent at a time), in-process.
// "Another user" is nobody (65534): the tests run as root, which may chown to it.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkStateDir, openStateDir } from '../../src/agent/state-dir.js';
import { LOCK_FILE, lockStateDir, PID_FILE } from '../../src/agent/state-dir-lock.js';
import { StateDirError } from '../../src/state-dir/safe-path.js';
import { needs } from '../support/requirements.js';

const NOBODY = 65534;
/** Planting another user's file takes chown to nobody, which only root may do. */
const root = needs('root');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'keystone-state-dir-'));
  dirs.push(d);
  return d;
};

function refusal(fn: () => unknown): StateDirError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StateDirError);
    return e as StateDirError;
  }
  throw new Error('expected a refusal');
}

/** What an agent leaves: its own files, and a run user's work directory (and a crashed install's staging) beside them. */
function lived(dir: string): void {
  writeFileSync(join(dir, 'state.db'), '', { mode: 0o600 });
  mkdirSync(join(dir, 'components', 'web', 'logs'), { recursive: true, mode: 0o750 });
  writeFileSync(join(dir, 'components', 'web', 'logs', 'stdout.log'), 'hi\n', { mode: 0o640 });
  mkdirSync(join(dir, 'components', 'web', 'work', 'data'), { recursive: true });
  mkdirSync(join(dir, 'components', 'web', '.work.artifacts-x1'));
  for (const p of ['work', 'work/data', '.work.artifacts-x1'])
    chownSync(join(dir, 'components', 'web', p), NOBODY, NOBODY);
  chmodSync(join(dir, 'components', 'web', 'work', 'data'), 0o777);
  mkdirSync(join(dir, 'cache', 'sha256'), { recursive: true });
}

describe('checkStateDir', () => {
  it.skipIf(root.skip)(
    root.title("accepts the agent's own files and the run users' work directories, whatever is in those"),
    () => {
      const dir = temp();
      lived(dir);
      expect(() => checkStateDir(dir)).not.toThrow();
    },
  );

  it.skipIf(root.skip)(
    root.title(
      "accepts the work directories of a group's units (components/app/web/work, components/w/5/work), not their logs",
    ),
    () => {
      const dir = temp();
      lived(dir);
      for (const unit of [
        ['app', 'web'],
        ['w', '5'],
        ['app', 'jobs', '2'],
      ]) {
        mkdirSync(join(dir, 'components', ...unit, 'work'), { recursive: true });
        chownSync(join(dir, 'components', ...unit, 'work'), NOBODY, NOBODY);
      }
      expect(() => checkStateDir(dir)).not.toThrow();
      mkdirSync(join(dir, 'components', 'w', '5', 'logs'));
      chownSync(join(dir, 'components', 'w', '5', 'logs'), NOBODY, NOBODY);
      expect(refusal(() => checkStateDir(dir)).message).toContain(
        `${join(dir, 'components', 'w', '5', 'logs')} is owned by uid ${NOBODY}`,
      );
    },
  );

  it.skipIf(root.skip)(
    root.title(
      'accepts a run user’s secret file in secrets-run/<start>/ (a device without tmpfs), not a directory of its there',
    ),
    () => {
      const dir = temp();
      lived(dir);
      mkdirSync(join(dir, 'secrets-run', 'web.0123456789abcdef'), { recursive: true, mode: 0o711 });
      writeFileSync(join(dir, 'secrets-run', 'web.0123456789abcdef', 'tls.key'), 'x', { mode: 0o400 });
      chownSync(join(dir, 'secrets-run', 'web.0123456789abcdef', 'tls.key'), NOBODY, NOBODY);
      expect(() => checkStateDir(dir)).not.toThrow();
      chownSync(join(dir, 'secrets-run', 'web.0123456789abcdef'), NOBODY, NOBODY);
      expect(refusal(() => checkStateDir(dir)).message).toContain(
        `${join(dir, 'secrets-run', 'web.0123456789abcdef')} is owned by uid ${NOBODY}`,
      );
    },
  );

  it('creates a missing state directory 0711', () => {
    const dir = join(temp(), 'keystone');
    checkStateDir(dir);
    expect(existsSync(dir)).toBe(true);
  });

  it.skipIf(root.skip)(
    root.title('refuses a state directory others can write, or that another user owns, saying how to fix it'),
    () => {
      const dir = temp();
      chmodSync(dir, 0o1777);
      // Sticky is not enough: another user could still add an api-token before the agent makes its own.
      expect(refusal(() => checkStateDir(dir)).message).toBe(
        `state directory ${dir} is writable by other users (mode 1777): chown root: ${dir} && chmod 711 ${dir}, and remove anything in it you did not put there`,
      );
      chmodSync(dir, 0o711);
      chownSync(dir, NOBODY, NOBODY);
      expect(refusal(() => checkStateDir(dir)).message).toContain(
        `is owned by uid ${NOBODY} (nobody), not by the agent's user uid 0 (root): chown root: ${dir} && chmod 711 ${dir}`,
      );
    },
  );

  it.skipIf(root.skip)(
    root.title(
      'refuses what another user put anywhere in it but a work directory, naming the first and counting the rest',
    ),
    () => {
      const dir = temp();
      lived(dir);
      writeFileSync(join(dir, 'api-token'), 'x'.repeat(64));
      chownSync(join(dir, 'api-token'), NOBODY, NOBODY);
      chmodSync(join(dir, 'components', 'web', 'logs'), 0o777);
      const e = refusal(() => checkStateDir(dir));
      expect(e.code).toBe('KS_STATE_DIR_UNSAFE');
      expect(e.message).toBe(
        `state directory ${dir}: ${join(dir, 'api-token')} is owned by uid ${NOBODY} (nobody), not by the agent's user uid 0 (root): ` +
          `remove it if you did not put it there, else chown root: ${join(dir, 'api-token')} && chmod go-w ${join(dir, 'api-token')} (and 1 more under ${dir}/)`,
      );
    },
  );

  it('refuses a link in it, and a state directory reached through a link', () => {
    const dir = temp();
    mkdirSync(join(dir, 'components', 'web'), { recursive: true });
    symlinkSync('/root', join(dir, 'components', 'web', 'logs'));
    expect(refusal(() => checkStateDir(dir)).message).toContain(
      `${join(dir, 'components', 'web', 'logs')} is a symbolic link, and the agent follows none in its state directory: remove it`,
    );
    const other = temp();
    symlinkSync(other, join(other, '..', `${other.split('/').pop()}-link`));
    dirs.push(`${other}-link`);
    expect(refusal(() => checkStateDir(`${other}-link`)).message).toBe(
      `state directory ${other}-link is a symbolic link: give --state-dir its real path (${other})`,
    );
  });

  it.skipIf(root.skip)(
    root.title('refuses a state directory under a directory another user owns (they could swap it)'),
    () => {
      const parent = temp();
      chownSync(parent, NOBODY, NOBODY);
      expect(refusal(() => checkStateDir(join(parent, 'state'))).message).toContain(
        `${parent} is owned by uid ${NOBODY} (nobody)`,
      );
      expect(existsSync(join(parent, 'state'))).toBe(false);
    },
  );
});

describe('the lock', () => {
  it('one holder at a time, even in one process: the second is told the pid; released, it is free again', () => {
    const dir = temp();
    const first = lockStateDir(dir, 4242);
    expect(readFileSync(join(dir, PID_FILE), 'utf8')).toBe('4242\n');
    const e = refusal(() => openStateDir(dir));
    expect(e.code).toBe('KS_STATE_DIR_LOCKED');
    expect(e.data.pid).toBe(4242);
    expect(e.message).toBe(
      `another agent (pid 4242) is using the state directory ${dir}: stop it first, or give this agent its own --state-dir`,
    );
    // The refused one left the holder's pid in place.
    expect(readFileSync(join(dir, PID_FILE), 'utf8')).toBe('4242\n');
    first.release();
    first.release();
    expect(existsSync(join(dir, PID_FILE))).toBe(false);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    const again = openStateDir(dir);
    expect(readFileSync(join(dir, PID_FILE), 'utf8')).toBe(`${process.pid}\n`);
    again.release();
  });

  it.skipIf(root.skip)(
    root.title('a refused start releases the lock it took (the contents are checked under it)'),
    () => {
      const dir = temp();
      writeFileSync(join(dir, 'api-token'), 'x'.repeat(64));
      chownSync(join(dir, 'api-token'), NOBODY, NOBODY);
      expect(refusal(() => openStateDir(dir)).code).toBe('KS_STATE_DIR_UNSAFE');
      rmSync(join(dir, 'api-token'));
      openStateDir(dir).release();
    },
  );
});
