// The Debian images the package is installed into, without a registry: `debootstrap --variant=minbase` from the
// Debian mirror, loaded into the engine once per machine and labelled with their recipe, so that a change of the
// recipe builds one again. systemd is in each so that the same image boots systemd as PID 1 for the unit's tests and,
// started with another command, is a container without an init system (where the maintainer scripts must not call
// systemctl); ca-certificates because the package depends on it and `dpkg -i` installs nothing.
//
// One image per architecture the package is built for. The machine's own (amd64 here) is Debian 12; the others run
// under qemu-user through binfmt_misc (registered with the F flag: the kernel opens qemu at registration, so it runs
// inside a chroot or a container that has no qemu of its own; test/support/requirement-checks.ts says what else):
// debootstrap's second stage, every command in the container, systemd itself. arm64 is Debian 12 too. armhf is
// Debian 13 with its `nodejs` (20.19): the armhf package has no Node of its own (Node ships no armv7 build after 22),
// it depends on Debian's, and the container reaches no mirror, so `dpkg -i` resolves that dependency only if the
// image has it already.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { withFileLock } from '../support/file-lock.js';

const run = promisify(execFile);

export type DebianArch = 'amd64' | 'arm64' | 'armhf';

export interface DebianImage {
  arch: DebianArch;
  /** Debian's code name: bookworm (12), trixie (13). */
  suite: string;
  /** Docker's name for the architecture (`docker run --platform`). */
  platform: string;
  /** The image's name in the engine. */
  tag: string;
  /** Whether this machine runs it natively (no qemu). */
  native: boolean;
  /** debootstrap's arguments before the target directory and the mirror. */
  debootstrapArgs: string[];
}

/** Docker's (OCI's) names: `--platform`, and the image configuration's architecture and variant. */
const PLATFORMS: Record<DebianArch, { architecture: string; variant?: string }> = {
  amd64: { architecture: 'amd64' },
  arm64: { architecture: 'arm64', variant: 'v8' },
  armhf: { architecture: 'arm', variant: 'v7' },
};
const SUITES: Record<DebianArch, string> = { amd64: 'bookworm', arm64: 'bookworm', armhf: 'trixie' };
const BASE_INCLUDES = ['systemd', 'systemd-sysv', 'dbus', 'ca-certificates'];
/** What the armhf package depends on and the image must hold already (see the top of the file). */
const EXTRA_INCLUDES: Partial<Record<DebianArch, string[]>> = { armhf: ['nodejs'] };

/** The name the machine's own image has always had: the amd64 tests and their cached image keep it. */
export const DEBIAN_IMAGE = 'keystone-test/debian:bookworm';

const RECIPE_LABEL = 'io.keystone.test-image';
const MIRROR = process.env.KEYSTONE_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
/**
 * debootstrap downloads and unpacks ~250 MiB: minutes on a slow mirror. Under qemu its second stage runs every
 * maintainer script of ~150 packages through an emulated dpkg and shell: the whole build took 2¼–3¼ min for arm64 and
 * 2½–4 min for armhf on this 2-core machine (busy or not); half an hour leaves room for a slow mirror.
 */
const BUILD_TIMEOUT_MS = 30 * 60_000;

let hostArchCache: string | undefined;
/** dpkg's name for this machine's architecture (Node's, translated, on a machine without dpkg: its tests skip). */
export function hostArch(): string {
  if (hostArchCache === undefined) {
    try {
      hostArchCache = execFileSync('dpkg', ['--print-architecture'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      hostArchCache =
        ({ x64: 'amd64', arm64: 'arm64', arm: 'armhf' } as Record<string, string>)[process.arch] ?? process.arch;
    }
  }
  return hostArchCache;
}

/** The image for `arch`: the machine's own, or one that runs under qemu. */
export function debianImage(arch: DebianArch = hostArch() as DebianArch): DebianImage {
  const suite = SUITES[arch];
  const native = arch === hostArch();
  const include = [...BASE_INCLUDES, ...(EXTRA_INCLUDES[arch] ?? [])];
  // The native image's arguments are those it was first built with (no --arch): its cached image stays current.
  const debootstrapArgs = [
    '--variant=minbase',
    ...(native ? [] : [`--arch=${arch}`]),
    `--include=${include.join(',')}`,
    suite,
  ];
  const tag = native && suite === 'bookworm' ? DEBIAN_IMAGE : `keystone-test/debian:${suite}-${arch}`;
  const p = PLATFORMS[arch];
  return {
    arch,
    suite,
    platform: ['linux', p.architecture, ...(p.variant ? [p.variant] : [])].join('/'),
    tag,
    native,
    debootstrapArgs,
  };
}

const recipeId = (image: DebianImage) =>
  createHash('sha256')
    .update(
      JSON.stringify(
        image.native
          ? { v: 1, args: image.debootstrapArgs }
          : { v: 3, args: image.debootstrapArgs, platform: image.platform, qemu: 'no-credentials' },
      ),
    )
    .digest('hex')
    .slice(0, 16);

async function imageIsCurrent(image: DebianImage): Promise<boolean> {
  try {
    const { stdout } = await run('docker', [
      'image',
      'inspect',
      image.tag,
      '--format',
      `{{index .Config.Labels "${RECIPE_LABEL}"}}`,
    ]);
    return stdout.trim() === recipeId(image);
  } catch {
    return false;
  }
}

/**
 * Builds the image for `arch` (default: this machine's) unless the engine has it from this recipe; one test file
 * builds, the others wait for it. Its name.
 */
export async function ensureDebianImage(arch?: DebianArch): Promise<string> {
  const image = debianImage(arch);
  const lock = join(
    tmpdir(),
    image.native && image.suite === 'bookworm'
      ? 'keystone-test-debian-bookworm.lock'
      : `keystone-test-debian-${image.suite}-${image.arch}.lock`,
  );
  await withFileLock(
    lock,
    { staleMs: BUILD_TIMEOUT_MS, timeoutMs: BUILD_TIMEOUT_MS + 60_000 },
    () => imageIsCurrent(image),
    () => build(image),
  );
  return image.tag;
}

async function build(image: DebianImage): Promise<void> {
  // The image of an older recipe, removed once the new one has its name (250–350 MB each).
  const previous = await run('docker', ['image', 'inspect', image.tag, '--format', '{{.Id}}']).then(
    (r) => r.stdout.trim(),
    () => undefined,
  );
  const root = await mkdtemp(join(tmpdir(), 'ks-debootstrap-'));
  try {
    await run('debootstrap', [...image.debootstrapArgs, root, MIRROR], {
      timeout: BUILD_TIMEOUT_MS,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((e: Error & { stderr?: string; stdout?: string }) => {
      const log = (() => {
        try {
          return execFileSync('tail', ['-n', '30', join(root, 'debootstrap', 'debootstrap.log')], { encoding: 'utf8' });
        } catch {
          return '';
        }
      })();
      throw new Error(
        `debootstrap of Debian ${image.suite} ${image.arch} from ${MIRROR} failed (KEYSTONE_DEBIAN_MIRROR picks another mirror): ${e.stderr || e.stdout?.slice(-2000) || e.message}${log ? `\ndebootstrap.log:\n${log}` : ''}`,
      );
    });
    if (!image.native) await withoutCredentials(root);
    await loadImage(root, image);
    // Left alone while a container still uses it.
    if (previous) await run('docker', ['image', 'rm', previous]).catch(() => undefined);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * systemd sets up a unit's credentials (ImportCredential=, LoadCredential=) in a child cloned into a new mount
 * namespace, and qemu-user refuses clone() with namespace flags (EINVAL; unshare() it passes on): every such unit
 * fails at the CREDENTIALS step, journald among them in Debian 13, and with it `journalctl`. None of the image's units
 * is given a credential, so a drop-in that empties those lists changes nothing else. The package's own unit asks for
 * no credentials and is left as shipped.
 */
async function withoutCredentials(root: string): Promise<void> {
  // Both Debian 12 and 13 have merged /usr (lib is a link to usr/lib): one directory, read once.
  const dirs = new Set(
    await Promise.all(
      ['usr/lib/systemd/system', 'lib/systemd/system'].map((d) => realpath(join(root, d)).catch(() => '')),
    ),
  );
  dirs.delete('');
  for (const units of dirs) {
    for (const unit of await readdir(units)) {
      const text = await readFile(join(units, unit), 'utf8').catch(() => '');
      if (
        !/^(ImportCredential|LoadCredential|LoadCredentialEncrypted|SetCredential|SetCredentialEncrypted)=/m.test(text)
      )
        continue;
      const dropIns = join(root, 'etc/systemd/system', `${unit}.d`);
      await mkdir(dropIns, { recursive: true });
      await writeFile(
        join(dropIns, 'qemu-no-credentials.conf'),
        '# qemu-user: no mount namespace for credentials (test/packaging/debian-image.ts)\n[Service]\nImportCredential=\nLoadCredential=\nLoadCredentialEncrypted=\nSetCredential=\nSetCredentialEncrypted=\n',
      );
    }
  }
}

/**
 * The root as a one-layer image of `image`'s platform, through `docker load` of an image archive written here:
 * `docker import --platform` would be shorter, but Debian 12's engine (20.10) records the machine's architecture
 * whatever --platform says, and `docker run --platform linux/arm64` of an image that says amd64 goes looking for it
 * in a registry.
 */
async function loadImage(root: string, image: DebianImage): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ks-image-'));
  try {
    const layer = join(dir, 'layer.tar');
    await run('tar', ['-C', root, '-cf', layer, '.'], { timeout: 5 * 60_000 });
    // The layer's digest is the image's diff_id: the engine checks it as it loads.
    const hash = createHash('sha256');
    await pipeline(createReadStream(layer), hash);
    const p = PLATFORMS[image.arch];
    const created = new Date().toISOString();
    const config = {
      architecture: p.architecture,
      ...(p.variant ? { variant: p.variant } : {}),
      os: 'linux',
      created,
      config: {
        Cmd: ['/bin/bash'],
        Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
        Labels: { [RECIPE_LABEL]: recipeId(image) },
      },
      rootfs: { type: 'layers', diff_ids: [`sha256:${hash.digest('hex')}`] },
      history: [{ created, created_by: `debootstrap ${image.debootstrapArgs.join(' ')}` }],
    };
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    await writeFile(
      join(dir, 'manifest.json'),
      JSON.stringify([{ Config: 'config.json', RepoTags: [image.tag], Layers: ['layer.tar'] }]),
    );
    await run('sh', ['-c', 'tar -C "$1" -c manifest.json config.json layer.tar | docker load', 'sh', dir], {
      timeout: 5 * 60_000,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
