// Paths in the state directory are reached without following a link at any level, through directories no other user
// can change: the walk itself, and the files the agent opens with it (component logs, work directories, the token,
// the store). "Another user" is nobody (65534): the tests run as root, which may chown to it.
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureApiToken } from '../../src/api/api-token.js';
import { openComponentLogs } from '../../src/runtime/log-files.js';
import { safeDirectory, StateDirError } from '../../src/state-dir/safe-path.js';
import { prepareWorkDir } from '../../src/runtime/work-dir.js';
import { openStateStore } from '../../src/store/state-store.js';
import { needs } from '../support/requirements.js';

const NOBODY = 65534;
/** Planting another user's file, or handing one over, takes chown to nobody, which only root may do. */
const root = needs('root');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = (prefix = 'keystone-safe-') => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

/** A directory only root may enter, as the place a planted link points the (root) agent at. */
const rootOnly = () => {
  const d = temp('keystone-root-only-');
  chmodSync(d, 0o700);
  return d;
};

async function refusal(p: Promise<unknown> | (() => unknown)): Promise<StateDirError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(StateDirError);
    expect((e as StateDirError).code).toBe('KS_STATE_DIR_UNSAFE');
    return e as StateDirError;
  }
  throw new Error('expected a refusal');
}

describe('safeDirectory', () => {
  it('creates what is missing (the last level with its mode) and accepts a sticky /tmp on the way', () => {
    const root = temp();
    const dir = join(root, 'a', 'b', 'logs');
    expect(safeDirectory(dir, { mode: 0o750 })).toBe(true);
    expect(lstatSync(dir).mode & 0o777).toBe(0o750);
    expect(lstatSync(join(root, 'a')).mode & 0o777).toBe(0o755);
    expect(safeDirectory(join(root, 'missing'))).toBe(false);
    expect(existsSync(join(root, 'missing'))).toBe(false);
  });

  it('refuses a link at any level, creating nothing behind it', async () => {
    const root = temp();
    const target = rootOnly();
    symlinkSync(target, join(root, 'components'));
    const e = await refusal(() => safeDirectory(join(root, 'components', 'web', 'logs'), { mode: 0o750 }));
    expect(e.message).toBe(
      `${join(root, 'components')} is a symbolic link: the agent follows no link on the way to its files (give the real path, or remove the link)`,
    );
    expect(readdirSync(target)).toEqual([]);
  });

  it.skipIf(root.skip)(
    root.title("refuses a directory of another user's, and one others can write that is not sticky"),
    async () => {
      const root = temp();
      mkdirSync(join(root, 'theirs'));
      chownSync(join(root, 'theirs'), NOBODY, NOBODY);
      expect((await refusal(() => safeDirectory(join(root, 'theirs', 'logs'), { mode: 0o750 }))).message).toContain(
        `${join(root, 'theirs')} is owned by uid ${NOBODY} (nobody)`,
      );
      expect(existsSync(join(root, 'theirs', 'logs'))).toBe(false);
      mkdirSync(join(root, 'open'));
      chmodSync(join(root, 'open'), 0o777);
      expect((await refusal(() => safeDirectory(join(root, 'open', 'logs'), { mode: 0o750 }))).message).toContain(
        'is writable by other users (mode 777)',
      );
    },
  );
});

describe('openComponentLogs', () => {
  it('does not follow a link planted above the log files: nothing is created where it points', async () => {
    const state = temp();
    const target = rootOnly();
    mkdirSync(join(state, 'components'));
    // O_NOFOLLOW on the file's own name is not enough: the link is one level up (and two levels up).
    symlinkSync(target, join(state, 'components', 'web'));
    const e = await refusal(openComponentLogs(join(state, 'components', 'web', 'logs')));
    expect(e.data.path).toBe(join(state, 'components', 'web'));
    mkdirSync(join(state, 'components', 'api'));
    symlinkSync(target, join(state, 'components', 'api', 'logs'));
    await refusal(openComponentLogs(join(state, 'components', 'api', 'logs')));
    expect(readdirSync(target)).toEqual([]);
  });

  it.skipIf(root.skip)(root.title('refuses a log file another user planted instead of appending to it'), async () => {
    const logs = join(temp(), 'logs');
    mkdirSync(logs, { mode: 0o750 });
    writeFileSync(join(logs, 'stdout.log'), '');
    chownSync(join(logs, 'stdout.log'), NOBODY, NOBODY);
    const e = await refusal(openComponentLogs(logs));
    expect(e.message).toContain(`${join(logs, 'stdout.log')} is owned by uid ${NOBODY} (nobody)`);
  });
});

describe('prepareWorkDir', () => {
  it('refuses a work directory whose parent is a link, creating nothing there', async () => {
    const state = temp();
    const target = rootOnly();
    mkdirSync(join(state, 'components'));
    symlinkSync(target, join(state, 'components', 'web'));
    await refusal(prepareWorkDir(join(state, 'components', 'web', 'work'), { uid: NOBODY, gid: NOBODY }));
    expect(readdirSync(target)).toEqual([]);
  });

  it.skipIf(root.skip)(
    root.title("gives the work directory to its run user (it is theirs, under the agent's own directory)"),
    async () => {
      const state = temp();
      const work = join(state, 'components', 'web', 'work');
      await prepareWorkDir(work, { uid: NOBODY, gid: NOBODY });
      expect(lstatSync(work).uid).toBe(NOBODY);
      expect(lstatSync(join(state, 'components', 'web')).uid).toBe(0);
    },
  );
});

describe('the token and the store', () => {
  it.skipIf(root.skip)(
    root.title('refuses an API token another user planted, or that others can rewrite'),
    async () => {
      const state = temp();
      const token = join(state, 'api-token');
      writeFileSync(token, `${'b'.repeat(64)}\n`, { mode: 0o600 });
      chownSync(token, NOBODY, NOBODY);
      expect((await refusal(() => ensureApiToken(state))).message).toMatch(
        /is owned by uid 65534 \(nobody\), not by the agent's user uid 0 \(root\) \(remove it, and the agent makes a new one\)$/,
      );
      chownSync(token, 0, 0);
      chmodSync(token, 0o666);
      expect((await refusal(() => ensureApiToken(state))).message).toContain('is writable by other users (mode 666)');
    },
  );

  it.skipIf(root.skip)(root.title('refuses a state database that is a link, or that another user owns'), async () => {
    const state = temp();
    const elsewhere = join(rootOnly(), 'state.db');
    symlinkSync(elsewhere, join(state, 'state.db'));
    expect((await refusal(() => openStateStore(state))).message).toContain(
      `${join(state, 'state.db')} is a symbolic link`,
    );
    expect(existsSync(elsewhere)).toBe(false);
    rmSync(join(state, 'state.db'));
    openStateStore(state).close();
    chownSync(join(state, 'state.db'), NOBODY, NOBODY);
    await refusal(() => openStateStore(state));
  });
});
