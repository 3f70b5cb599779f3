// A small tmpfs mounted on a test's directory (root only), and a filler file that takes every free byte of it: a
// device whose state directory fills up, on demand, without touching the machine's real disks.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface SmallFilesystem {
  dir: string;
  /** Free bytes as an unprivileged writer sees them. */
  free(): number;
  /**
   * Writes `name` until the file system says ENOSPC (or EDQUOT), so nothing is left; then frees `slackBytes` again
   * (a file system that is nearly full rather than full). Returns the bytes written.
   */
  fill(slackBytes?: number, name?: string): number;
  /** Removes the filler: space returns. */
  drain(name?: string): void;
  /** Unmounts (lazily, so that a process a failed test left inside cannot keep it mounted). */
  unmount(): void;
}

const FILLER = '.filler';

/** Mounts a tmpfs of `sizeBytes` on `dir` (an existing, empty directory), mode 0711 as a state directory has. */
export function mountSmallFilesystem(dir: string, sizeBytes: number): SmallFilesystem {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0711`, 'keystone-test-tmpfs', dir], {
    stdio: 'pipe',
  });
  let mounted = true;
  const fs: SmallFilesystem = {
    dir,
    free: () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    fill(slackBytes = 0, name = FILLER) {
      const file = join(dir, name);
      const fd = openSync(file, 'a');
      const chunk = Buffer.alloc(64 * 1024, 0x78);
      let written = 0;
      try {
        // Big chunks first, then single pages: tmpfs refuses a write that does not fit whole.
        for (const size of [chunk.length, 4096, 1]) {
          for (;;) {
            try {
              written += writeSync(fd, chunk, 0, size);
            } catch (e) {
              const code = (e as NodeJS.ErrnoException).code;
              if (code === 'ENOSPC' || code === 'EDQUOT') break;
              throw e;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
      if (slackBytes > 0) {
        // Give back the slack by shrinking the filler: the rest of the file system stays as full as it was.
        execFileSync('truncate', ['-s', `-${slackBytes}`, file]);
      }
      return written;
    },
    drain(name = FILLER) {
      rmSync(join(dir, name), { force: true });
    },
    unmount() {
      if (!mounted) return;
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      mounted = false;
    },
  };
  return fs;
}
