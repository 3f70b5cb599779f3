// Where secret files live (secrets-root.ts): a directory no one can guess or take first (mkdtemp) on tmpfs where the
// device has one, chosen from a mount table the test gives, recorded in the state directory for the next agent.
import { createHash } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readdir, readFile, rename, stat, symlink, writeFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountOf, parseMounts } from '../../src/runtime/mount-table.js';
import {
  chooseSecretsRoot,
  fixedSecretsDir,
  recordedSecretsRoot,
  SECRETS_ROOT_RECORD,
} from '../../src/runtime/secrets-root.js';
import { isRoot, tempRoot } from './runtime-fixtures.js';

let tmp: Awaited<ReturnType<typeof tempRoot>>;
let run: string;
let shm: string;
let stateDir: string;
const me = process.geteuid!();
/** The mode the agent gives the directory: 0711 as root (run users pass through to their file), else 0700. */
const MODE = me === 0 ? 0o711 : 0o700;

beforeEach(async () => {
  tmp = await tempRoot();
  run = join(tmp.root, 'run');
  shm = join(tmp.root, 'shm');
  stateDir = join(tmp.root, 'state');
  await Promise.all([mkdir(run), mkdir(shm, { mode: 0o1777 }), mkdir(stateDir, { mode: 0o711 })]);
  await chmod(shm, 0o1777);
});
afterEach(() => tmp.cleanup());

/** A mount table with `/` on ext4 and each of `tmpfs` mounted tmpfs (rw). */
const mounts = (...tmpfs: string[]) =>
  [
    '/dev/vda / ext4 rw,relatime 0 0',
    ...tmpfs.map((m) => `tmpfs ${m.replaceAll(' ', '\\040')} tmpfs rw,nosuid,nodev 0 0`),
  ].join('\n');
/** The agent as this test's process runs it, with /dev/shm on tmpfs (and /run too with `withRun`). */
const choose = (withRun = false, dir = stateDir) =>
  chooseSecretsRoot(dir, { uid: me, mounts: withRun ? mounts(run, shm) : mounts(shm), run, shm });

describe('chooseSecretsRoot', () => {
  it.skipIf(!isRoot)(
    'as root with /run on tmpfs: <run>/keystone-XXXXXX, made at first use, 0711, recorded (0600) in the state directory',
    async () => {
      const r = choose(true);
      expect(r).toMatchObject({ base: run, tmpfs: true });
      expect(r.warning).toBeUndefined();
      expect(r.known()).toBeUndefined();
      expect(await readdir(run)).toEqual([]);
      const dir = r.dir();
      expect(dir).toMatch(new RegExp(`^${run}/keystone-[A-Za-z0-9]{6}$`));
      const st = await stat(dir);
      expect([st.mode & 0o7777, st.uid]).toEqual([0o711, 0]);
      expect(r.dir()).toBe(dir);
      const record = await stat(join(stateDir, SECRETS_ROOT_RECORD));
      expect([record.mode & 0o7777, record.uid]).toEqual([0o600, 0]);
      expect(recordedSecretsRoot(stateDir)).toBe(dir);
      // Another state directory, another root.
      await mkdir(join(tmp.root, 'other'));
      expect(choose(true, join(tmp.root, 'other')).dir()).not.toBe(dir);
    },
  );

  it('/dev/shm when /run is no tmpfs, or for an agent that is not root (it cannot write /run): <shm>/keystone-<uid>-XXXXXX', () => {
    const dir = choose().dir();
    expect(dir).toMatch(new RegExp(`^${shm}/keystone-${me}-[A-Za-z0-9]{6}$`));
    expect(statSync(dir).mode & 0o7777).toBe(MODE);
    const user = chooseSecretsRoot(join(tmp.root, 'user-state'), { uid: 1000, mounts: mounts(run, shm), run, shm });
    expect(user).toMatchObject({ base: shm, tmpfs: true });
  });

  it('an agent started again takes up the recorded directory (its files of running instances are there); two agents do not share one', async () => {
    const first = choose().dir();
    await writeFile(join(first, 'app.0123456789abcdef.ref'), '{}');
    const again = choose();
    expect(again.known()).toBe(first);
    expect(again.dir()).toBe(first);
    expect(again.former()).toEqual([]);
  });

  it('a name someone made at the old predictable place, or any other, is no matter: the directory is one no one could take first', async () => {
    // The name an earlier version used (keystone-<uid>-<sha256 of the state directory>), made by someone else first.
    const hash = createHash('sha256').update(stateDir).digest('hex').slice(0, 12);
    const squatted = join(shm, `keystone-${me}-${hash}`);
    await mkdir(squatted, { mode: 0o777 });
    await chmod(squatted, 0o777);
    if (isRoot) await chown(squatted, 65534, 65534);
    await symlink(join(tmp.root, 'elsewhere'), join(shm, `keystone-${me}-AAAAAA`));
    const r = choose();
    expect(r).toMatchObject({ tmpfs: true, base: shm });
    expect(r.warning).toBeUndefined();
    const dir = r.dir();
    expect(dir).not.toBe(squatted);
    expect((await lstat(dir)).isDirectory()).toBe(true);
    expect((await stat(dir)).uid).toBe(me);
  });

  it('a recorded directory no longer as the agent left it is not taken up: a new one; the old one swept where only the agent could change it', async () => {
    // Its mode changed (by root or the agent's user): a new directory, the old one swept of what no instance uses.
    const first = choose().dir();
    await chmod(first, 0o755);
    const r = choose();
    expect(r.known()).toBeUndefined();
    const second = r.dir();
    expect(second).not.toBe(first);
    expect(r.former()).toEqual([first]);
    expect(JSON.parse(await readFile(join(stateDir, SECRETS_ROOT_RECORD), 'utf8'))).toEqual({
      dir: second,
      former: [first],
    });
    // Still listed for the agent after (the files of an instance that still runs keep it), until it is gone.
    expect(choose().former()).toEqual([first]);

    // Writable by others: neither taken up nor swept (its records could be anyone's).
    await chmod(second, 0o777);
    const third = choose();
    expect(third.dir()).not.toBe(second);
    expect(third.former()).toEqual([first]);

    // Replaced by a link: not followed, not swept.
    const fourth = recordedSecretsRoot(stateDir)!;
    await rename(fourth, `${fourth}.moved`);
    await symlink(`${fourth}.moved`, fourth);
    const fifth = choose();
    expect(fifth.known()).toBeUndefined();
    expect(fifth.dir()).not.toBe(fourth);
    expect(fifth.former()).toEqual([first]);
  });

  it.skipIf(!isRoot)('a recorded directory another user now owns is not taken up, nor swept', async () => {
    const first = choose().dir();
    await chown(first, 65534, 65534);
    const r = choose();
    expect(r.dir()).not.toBe(first);
    expect(r.former()).toEqual([]);
  });

  it('a record that is not the agent’s own file is not read: a link, or one others can write', async () => {
    const first = choose().dir();
    const record = join(stateDir, SECRETS_ROOT_RECORD);
    await chmod(record, 0o666);
    expect(choose().known()).toBeUndefined();
    await chmod(record, 0o600);
    expect(choose().known()).toBe(first);
    await rename(record, `${record}.real`);
    await symlink(`${record}.real`, record);
    expect(choose().known()).toBeUndefined();
    expect(recordedSecretsRoot(stateDir)).toBeUndefined();
  });

  it('without any tmpfs: <state-dir>/secrets-run, with a warning that says why; a state directory on tmpfs needs none', async () => {
    const r = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(), run, shm });
    expect(r).toMatchObject({ base: join(stateDir, 'secrets-run'), tmpfs: false });
    expect(r.warning).toMatch(/on disk/);
    expect(r.warning).toContain(`${run} is not a tmpfs`);
    expect(r.warning).toContain(`${shm} is not a tmpfs`);
    expect(r.dir()).toBe(join(stateDir, 'secrets-run'));
    expect((await stat(r.dir())).mode & 0o7777).toBe(0o711);
    const onTmpfs = chooseSecretsRoot(stateDir, {
      uid: 0,
      mounts: mounts(tmp.root),
      run: join(tmp.root, 'no-run'),
      shm: join(tmp.root, 'no-shm'),
    });
    expect(onTmpfs).toMatchObject({ base: join(stateDir, 'secrets-run'), tmpfs: true });
    expect(onTmpfs.warning).toBeUndefined();
  });

  it('a read-only tmpfs is named as such in the warning; once a tmpfs is there, the directory on disk is swept and left', () => {
    const ro = chooseSecretsRoot(stateDir, { uid: me, mounts: `${mounts()}\ntmpfs ${shm} tmpfs ro 0 0`, run, shm });
    expect(ro.warning).toContain(`${shm} is mounted read-only`);
    const onDisk = ro.dir();
    const r = choose();
    expect(r.dir().startsWith(`${shm}/`)).toBe(true);
    expect(r.former()).toEqual([onDisk]);
  });
});

describe('fixedSecretsDir', () => {
  it('creates a directory given as such: 0711 for a root agent (run users pass through), 0700 otherwise', async () => {
    const asRoot = fixedSecretsDir(join(tmp.root, 'a'), 0).dir();
    expect((await stat(asRoot)).mode & 0o7777).toBe(0o711);
    const asUser = fixedSecretsDir(join(tmp.root, 'b'), 1000).dir();
    expect((await stat(asUser)).mode & 0o7777).toBe(0o700);
  });
});

describe('the mount table', () => {
  it('reads escaped mount points and finds the longest one a path is under (the last of stacked ones)', () => {
    const m = parseMounts(
      [
        '/dev/vda / ext4 rw 0 0',
        'tmpfs /run tmpfs rw 0 0',
        'tmpfs /srv/my\\040data tmpfs ro 0 0',
        'overlay /run ext4 rw 0 0',
        '',
      ].join('\n'),
    );
    expect(m.map((x) => x.mountPoint)).toEqual(['/', '/run', '/srv/my data', '/run']);
    expect(mountOf(m, '/run/keystone')?.fstype).toBe('ext4');
    expect(mountOf(m, '/runx')?.mountPoint).toBe('/');
    expect(mountOf(m, '/srv/my data/x')?.options).toContain('ro');
  });
});
