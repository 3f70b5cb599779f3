// The test image: a rootfs of the host's static busybox, `docker import`ed once per machine (no registry is reachable).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, mkdir, mkdtemp, open, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BUSYBOX_IMAGE = 'keystone-test/busybox:1';
export const BUSYBOX_APPLETS = ['sh', 'httpd', 'sleep', 'nc', 'id', 'cat', 'echo', 'wget', 'true', 'false', 'ls', 'grep', 'touch', 'test'] as const;
const BUSYBOX = '/bin/busybox';

/** What the image holds, as a label: an image of the same tag built from another recipe (other applets) is rebuilt. */
const RECIPE_ID = createHash('sha256')
  .update(JSON.stringify({ v: 1, applets: BUSYBOX_APPLETS }))
  .digest('hex')
  .slice(0, 16);
const RECIPE_LABEL = 'io.keystone.test-image';
const LOCK = join(tmpdir(), 'keystone-test-busybox-image.lock');
/** A lock older than this was left by a killed run. */
const STALE_LOCK_MS = 120_000;

/** Is a Docker engine answering (`docker info`)? */
export function dockerAvailable(): boolean {
  return spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

function imageIsCurrent(): boolean {
  const r = spawnSync('docker', ['image', 'inspect', BUSYBOX_IMAGE, '--format', `{{index .Config.Labels "${RECIPE_LABEL}"}}`], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() === RECIPE_ID;
}

/**
 * Builds `keystone-test/busybox:1` unless the engine has it already (from this recipe). Safe to call from every
 * test file at once: one builds under an exclusive lock file, the others poll (with a deadline) until it is there.
 */
export async function ensureBusyboxImage(timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (imageIsCurrent()) return BUSYBOX_IMAGE;
    const lock = await tryLock();
    if (lock) {
      try {
        if (!imageIsCurrent()) await build();
        return BUSYBOX_IMAGE;
      } finally {
        await lock.close();
        await rm(LOCK, { force: true });
      }
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for another test file to build ${BUSYBOX_IMAGE} (lock ${LOCK})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function tryLock() {
  try {
    return await open(LOCK, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const st = await stat(LOCK).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > STALE_LOCK_MS) await rm(LOCK, { force: true });
    return undefined;
  }
}

async function build(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ks-busybox-rootfs-'));
  try {
    for (const d of ['bin', 'etc', 'tmp', 'www']) await mkdir(join(root, d), { recursive: true });
    await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
    for (const a of BUSYBOX_APPLETS) await symlink('busybox', join(root, 'bin', a));
    await writeFile(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
    await writeFile(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
    await writeFile(join(root, 'www', 'index.html'), 'keystone test page\n');
    const r = spawnSync(
      'sh',
      [
        '-c',
        `tar -C "$1" -c . | docker import --change 'ENV PATH=/bin' --change 'CMD ["sh"]' --change "LABEL ${RECIPE_LABEL}=${RECIPE_ID}" - "$2"`,
        'sh',
        root,
        BUSYBOX_IMAGE,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (r.status !== 0) throw new Error(`docker import of ${BUSYBOX_IMAGE} failed: ${r.stderr || r.error?.message}`);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Ids of every container (running or not) carrying the label `key=value`. */
export function containersLabelled(key: string, value: string): string[] {
  const r = spawnSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `label=${key}=${value}`], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`docker ps --filter label=${key}=${value} failed: ${r.stderr || r.error?.message}`);
  return r.stdout.split('\n').filter(Boolean);
}

/** Force-removes every container carrying the label `key=value` (a test's clean-up, e.g. by `io.keystone.owner`). */
export function removeContainersLabelled(key: string, value: string): void {
  const ids = containersLabelled(key, value);
  if (ids.length === 0) return;
  const r = spawnSync('docker', ['rm', '-f', '-v', ...ids], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 && containersLabelled(key, value).length > 0) throw new Error(`docker rm -f of ${ids.join(' ')} failed: ${r.stderr || r.error?.message}`);
}
