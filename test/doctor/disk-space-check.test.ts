// Free space where the state directory is: a real small file system (tmpfs, as root), and a figure set on cue.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkDiskSpace, formatBytes } from '../../src/doctor/disk-space-check.js';
import { MIN_FREE_BYTES } from '../../src/doctor/doctor-facts.js';
import { needs } from '../support/requirements.js';
import { facts, scratch, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.cleanup());

describe('disk-space', () => {
  it('passes the real file system of a state directory still to be created, naming where it looked', async () => {
    const r = await checkDiskSpace(s.stateDir, facts());
    expect(r.check).toBe('disk-space');
    expect(r.detail).toMatch(new RegExp(`free for ${s.stateDir} \\(on the file system of ${s.dir}\\)`));
  });

  it('fails under the minimum, saying the figure and the minimum', async () => {
    const r = await checkDiskSpace(s.stateDir, facts({ statfs: async () => ({ bavail: 100, bsize: 4096 }) }));
    expect(r).toMatchObject({
      status: 'fail',
      detail: `only 400 KiB free for ${s.stateDir} (on the file system of ${s.dir}), under 512.0 MiB`,
    });
    expect(r.fix).toContain(`${s.stateDir}/cache`);
  });

  it('fails when the file system cannot be read', async () => {
    // The real statfs, of a path that is not there.
    const r = await checkDiskSpace(s.stateDir, facts({ statfs: (p) => statfs(join(p, 'no', 'such')) }));
    expect(r).toMatchObject({ status: 'fail' });
    expect(r.detail).toContain(`cannot read the free space of ${s.dir}: ENOENT`);
  });

  it('formats sizes in binary units', () => {
    expect([formatBytes(512), formatBytes(2048), formatBytes(MIN_FREE_BYTES), formatBytes(3.5 * 1024 ** 3)]).toEqual([
      '512 B',
      '2 KiB',
      '512.0 MiB',
      '3.5 GiB',
    ]);
  });

  const root = needs('root');
  describe.skipIf(root.skip)(root.title('on a real 16 MiB tmpfs'), () => {
    let mnt: string;
    beforeEach(() => {
      mnt = join(s.dir, 'small');
      mkdirSync(mnt);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mnt]);
    });
    afterEach(() => execFileSync('umount', [mnt]));

    it('fails a state directory on it', async () => {
      const stateDir = join(mnt, 'state');
      mkdirSync(stateDir, { mode: 0o711 });
      const r = await checkDiskSpace(stateDir, facts());
      expect(r).toMatchObject({ status: 'fail' });
      expect(r.detail).toMatch(new RegExp(`^only 1[56]\\.\\d MiB free for ${stateDir}, under 512\\.0 MiB$`));
    });
  });
});
