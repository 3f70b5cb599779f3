// Where secret files live (secrets-root.ts): tmpfs where the device has one, chosen from a mount table the test gives.
import { chown, lstat, mkdir, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chooseSecretsRoot, ensureSecretsRoot, mountOf, parseMounts } from '../../src/runtime/secrets-root.js';
import { isRoot, tempRoot } from './runtime-fixtures.js';

let tmp: Awaited<ReturnType<typeof tempRoot>>;
let run: string;
let shm: string;
let stateDir: string;

beforeEach(async () => {
  tmp = await tempRoot();
  run = join(tmp.root, 'run');
  shm = join(tmp.root, 'shm');
  stateDir = join(tmp.root, 'state');
  await Promise.all([mkdir(run), mkdir(shm, { mode: 0o1777 }), mkdir(stateDir)]);
});
afterEach(() => tmp.cleanup());

/** A mount table with `/` on ext4 and each of `tmpfs` mounted tmpfs (rw). */
const mounts = (...tmpfs: string[]) => ['/dev/vda / ext4 rw,relatime 0 0', ...tmpfs.map((m) => `tmpfs ${m.replaceAll(' ', '\\040')} tmpfs rw,nosuid,nodev 0 0`)].join('\n');

describe('chooseSecretsRoot', () => {
  it('as root with /run on tmpfs: <run>/keystone/<hash of the state directory>/secrets, created only when used', async () => {
    const r = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(run, shm), run, shm });
    expect(r.tmpfs).toBe(true);
    expect(r.warning).toBeUndefined();
    expect(r.dir).toMatch(new RegExp(`^${run}/keystone/[0-9a-f]{12}/secrets$`));
    await expect(lstat(join(run, 'keystone'))).rejects.toMatchObject({ code: 'ENOENT' });
    // Another state directory, another root.
    expect(chooseSecretsRoot(join(tmp.root, 'other'), { uid: 0, mounts: mounts(run, shm), run, shm }).dir).not.toBe(r.dir);
  });

  it('/dev/shm when /run is no tmpfs, or for an agent that is not root (it cannot write /run)', () => {
    const asRoot = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(shm), run, shm });
    expect(asRoot.dir).toMatch(new RegExp(`^${shm}/keystone-0-[0-9a-f]{12}/secrets$`));
    expect(asRoot.tmpfs).toBe(true);
    const user = chooseSecretsRoot(stateDir, { uid: 1000, mounts: mounts(run, shm), run, shm });
    expect(user.dir).toMatch(new RegExp(`^${shm}/keystone-1000-[0-9a-f]{12}/secrets$`));
  });

  it('refuses a /dev/shm directory that is a link: the state directory instead, said in a warning', async () => {
    const first = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(shm), run, shm });
    await mkdir(join(tmp.root, 'elsewhere'));
    await symlink(join(tmp.root, 'elsewhere'), join(first.dir, '..'));
    const r = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(shm), run, shm });
    expect(r).toMatchObject({ dir: join(stateDir, 'secrets-run'), tmpfs: false });
    expect(r.warning).toMatch(/symbolic link/);
  });

  it.skipIf(!isRoot)('refuses a /dev/shm directory another user made', async () => {
    const first = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(shm), run, shm });
    const base = join(first.dir, '..');
    await mkdir(base);
    await chown(base, 65534, 65534);
    const r = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(shm), run, shm });
    expect(r.dir).toBe(join(stateDir, 'secrets-run'));
    expect(r.warning).toMatch(/owned by uid 65534/);
  });

  it('without any tmpfs: <state-dir>/secrets-run, with a warning that says so; a state directory on tmpfs needs none', () => {
    const r = chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(), run, shm });
    expect(r).toMatchObject({ dir: join(stateDir, 'secrets-run'), tmpfs: false });
    expect(r.warning).toMatch(/on disk/);
    expect(chooseSecretsRoot(stateDir, { uid: 0, mounts: mounts(tmp.root), run: join(tmp.root, 'no-run'), shm: join(tmp.root, 'no-shm') })).toEqual({
      dir: join(stateDir, 'secrets-run'),
      tmpfs: true,
    });
  });
});

describe('ensureSecretsRoot', () => {
  it('creates the root and its parent: 0711 for a root agent (run users pass through), 0700 otherwise', async () => {
    const asRoot = join(tmp.root, 'a', 'secrets');
    ensureSecretsRoot(asRoot, 0);
    expect((await stat(asRoot)).mode & 0o7777).toBe(0o711);
    expect((await stat(join(asRoot, '..'))).mode & 0o7777).toBe(0o711);
    const asUser = join(tmp.root, 'b', 'secrets');
    ensureSecretsRoot(asUser, 1000);
    expect((await stat(asUser)).mode & 0o7777).toBe(0o700);
    expect((await stat(join(asUser, '..'))).mode & 0o7777).toBe(0o700);
  });
});

describe('the mount table', () => {
  it('reads escaped mount points and finds the longest one a path is under (the last of stacked ones)', () => {
    const m = parseMounts(['/dev/vda / ext4 rw 0 0', 'tmpfs /run tmpfs rw 0 0', 'tmpfs /srv/my\\040data tmpfs ro 0 0', 'overlay /run ext4 rw 0 0', ''].join('\n'));
    expect(m.map((x) => x.mountPoint)).toEqual(['/', '/run', '/srv/my data', '/run']);
    expect(mountOf(m, '/run/keystone')?.fstype).toBe('ext4');
    expect(mountOf(m, '/runx')?.mountPoint).toBe('/');
    expect(mountOf(m, '/srv/my data/x')?.options).toContain('ro');
  });
});
