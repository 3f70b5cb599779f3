// The Debian 12 image the package is installed into, without a registry: `debootstrap --variant=minbase bookworm`
// from the Debian mirror, `docker import`ed once per machine (a minute or two) and labelled with its recipe, so that
// a change of the recipe builds it again. systemd is in it so that the same image boots systemd as PID 1 for the
// unit's tests and, started with another command, is a container without an init system (where the maintainer
// scripts must not call systemctl); ca-certificates because the package depends on it and `dpkg -i` installs nothing.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { withFileLock } from '../support/file-lock.js';

const run = promisify(execFile);

export const DEBIAN_IMAGE = 'keystone-test/debian:bookworm';
const RECIPE_LABEL = 'io.keystone.test-image';
const MIRROR = process.env.KEYSTONE_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
const DEBOOTSTRAP_ARGS = ['--variant=minbase', '--include=systemd,systemd-sysv,dbus,ca-certificates', 'bookworm'];
/** debootstrap downloads and unpacks ~250 MiB: minutes on a slow mirror. */
const BUILD_TIMEOUT_MS = 15 * 60_000;

const recipeId = () => createHash('sha256').update(JSON.stringify({ v: 1, args: DEBOOTSTRAP_ARGS })).digest('hex').slice(0, 16);

async function imageIsCurrent(): Promise<boolean> {
  try {
    const { stdout } = await run('docker', ['image', 'inspect', DEBIAN_IMAGE, '--format', `{{index .Config.Labels "${RECIPE_LABEL}"}}`]);
    return stdout.trim() === recipeId();
  } catch {
    return false;
  }
}

/** Builds DEBIAN_IMAGE unless the engine has it from this recipe; one test file builds, the others wait for it. */
export async function ensureDebianImage(): Promise<string> {
  await withFileLock(join(tmpdir(), 'keystone-test-debian-bookworm.lock'), { staleMs: BUILD_TIMEOUT_MS, timeoutMs: BUILD_TIMEOUT_MS + 60_000 }, imageIsCurrent, build);
  return DEBIAN_IMAGE;
}

async function build(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ks-debootstrap-'));
  try {
    await run('debootstrap', [...DEBOOTSTRAP_ARGS, root, MIRROR], { timeout: BUILD_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }).catch((e: Error & { stderr?: string; stdout?: string }) => {
      throw new Error(`debootstrap of Debian 12 from ${MIRROR} failed (KEYSTONE_DEBIAN_MIRROR picks another mirror): ${e.stderr || e.stdout?.slice(-2000) || e.message}`);
    });
    await run('sh', ['-c', `tar -C "$1" -c . | docker import --change "LABEL ${RECIPE_LABEL}=$3" --change 'CMD ["/bin/bash"]' - "$2"`, 'sh', root, DEBIAN_IMAGE, recipeId()], {
      timeout: 5 * 60_000,
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
