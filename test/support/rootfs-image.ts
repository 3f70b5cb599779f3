// Test images without a registry: a rootfs of the host's static busybox (plus whatever a test image adds),
// `docker import`ed once per machine under a lock file, and rebuilt when what it should hold changes.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withFileLock } from './file-lock.js';
import { staticBusybox } from './requirement-checks.js';
import { engineCli, testEngine, type TestEngine } from './test-engine.js';

const RECIPE_LABEL = 'io.keystone.test-image';
/** A lock older than this was left by a killed run. */
const STALE_LOCK_MS = 120_000;

export interface RootfsImage {
  tag: string;
  /** Busybox applets linked in /bin. */
  applets: readonly string[];
  /** Directories made at the root besides bin, etc and tmp. */
  dirs?: readonly string[];
  /** PATH inside the image. */
  path?: string;
  /** Adds the image's own files to the rootfs; `describe` enters the recipe label, so a change rebuilds it. */
  fill?: (root: string) => Promise<void>;
  describe?: unknown;
}

/** The short digest of what `image` holds, kept as a label on the built image. */
function recipeId(image: RootfsImage): string {
  return createHash('sha256')
    .update(
      JSON.stringify({
        v: 1,
        applets: image.applets,
        dirs: image.dirs ?? [],
        path: image.path ?? '/bin',
        describe: image.describe ?? null,
      }),
    )
    .digest('hex')
    .slice(0, 16);
}

function imageIsCurrent(image: RootfsImage, engine: TestEngine): boolean {
  const { cmd, args } = engineCli(engine);
  const r = spawnSync(
    cmd,
    [...args, 'image', 'inspect', image.tag, '--format', `{{index .Config.Labels "${RECIPE_LABEL}"}}`],
    { encoding: 'utf8' },
  );
  return r.status === 0 && r.stdout.trim() === recipeId(image);
}

/**
 * Builds `image` unless the engine has it already (from this recipe). Safe to call from every test file at once: one
 * builds under an exclusive lock file, the others poll (with a deadline) until it is there.
 */
export async function ensureRootfsImage(
  image: RootfsImage,
  timeoutMs = 60_000,
  engine: TestEngine = testEngine(),
): Promise<string> {
  const lockPath = join(
    tmpdir(),
    `keystone-test-${engine === 'docker' ? '' : `${engine}-`}${image.tag.replace(/[^a-z0-9]+/gi, '-')}.lock`,
  );
  await withFileLock(
    lockPath,
    { staleMs: STALE_LOCK_MS, timeoutMs },
    () => imageIsCurrent(image, engine),
    () => build(image, engine),
  );
  return image.tag;
}

async function build(image: RootfsImage, engine: TestEngine): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ks-rootfs-'));
  try {
    for (const d of ['bin', 'etc', 'tmp', ...(image.dirs ?? [])]) await mkdir(join(root, d), { recursive: true });
    // The one needs('busybox') found on PATH (busybox-static installs /bin/busybox).
    await copyFile(staticBusybox() ?? '/bin/busybox', join(root, 'bin', 'busybox'));
    for (const a of image.applets) await symlink('busybox', join(root, 'bin', a));
    await writeFile(
      join(root, 'etc', 'passwd'),
      'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n',
    );
    await writeFile(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
    await image.fill?.(root);
    // `podman import` takes the same --change instructions (through the API service, as the agent sees images).
    const { cmd, args } = engineCli(engine);
    const r = spawnSync(
      'sh',
      [
        '-c',
        `root=$1 tag=$2 path=$3 id=$4; shift 4; tar -C "$root" -c . | "$@" import --change "ENV PATH=$path" --change 'CMD ["sh"]' --change "LABEL ${RECIPE_LABEL}=$id" - "$tag"`,
        'sh',
        root,
        image.tag,
        image.path ?? '/bin',
        recipeId(image),
        cmd,
        ...args,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (r.status !== 0) throw new Error(`${cmd} import of ${image.tag} failed: ${r.stderr || r.error?.message}`);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
