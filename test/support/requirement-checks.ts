// What a requirement of the tests is, how to tell whether this machine has it, and the one-line fix when it does not.
// No vitest import: the skip-summary reporter (main process) reads the same checks the tests (workers) use.
import { spawnSync } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { delimiter, join } from 'node:path';
import { podmanSocket } from './test-engine.js';

export type Requirement =
  | 'docker'
  | 'podman'
  | 'minisign'
  | 'age'
  | 'busybox'
  | 'promtool'
  | 'root'
  | 'python3'
  | 'openssl'
  | 'debootstrap'
  | 'dpkg-deb'
  | 'g++'
  | 'systemd-analyze'
  | 'faketime'
  | 'chromium'
  | 'qemu-arm64'
  | 'qemu-armhf';

export const REQUIREMENTS: readonly Requirement[] = [
  'docker',
  'podman',
  'minisign',
  'age',
  'busybox',
  'promtool',
  'root',
  'python3',
  'openssl',
  'debootstrap',
  'dpkg-deb',
  'g++',
  'systemd-analyze',
  'faketime',
  'chromium',
  'qemu-arm64',
  'qemu-armhf',
];

/** Set to "1", a skip for a missing requirement fails the run instead (CI must run everything). */
export const STRICT_ENV = 'KEYSTONE_TEST_STRICT';

export const isStrict = (env: NodeJS.ProcessEnv = process.env): boolean => env[STRICT_ENV] === '1';

/** The marker a suite title carries, e.g. " [needs docker, busybox]"; the reporter finds skips by it. */
export const markerOf = (reqs: readonly Requirement[]): string => `[needs ${reqs.join(', ')}]`;

const MARKER = /\[needs ([a-z0-9+, -]+)\]/g;

/** Every requirement named by the markers in `title` (a test's full name, parents included). */
export function requirementsInTitle(title: string): Requirement[] {
  const found = new Set<Requirement>();
  for (const m of title.matchAll(MARKER)) {
    for (const name of m[1]!.split(',')) {
      const r = name.trim() as Requirement;
      if (REQUIREMENTS.includes(r)) found.add(r);
    }
  }
  return [...found];
}

/** An executable file called `name` in a directory of `env.PATH` (PATH, not a fixed path, so a test can hide a tool). */
export function findInPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: the next directory
    }
  }
  return undefined;
}

/**
 * Is `file` a statically linked ELF (no PT_INTERP program header)? The test images copy busybox into a bare rootfs,
 * where a dynamically linked one (Debian's `busybox` package) finds no loader and every container exits 127.
 */
export function isStaticElf(file: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(64);
    if (readSync(fd, head, 0, 64, 0) < 64 || head.readUInt32BE(0) !== 0x7f454c46) return false;
    const is64 = head[4] === 2;
    const le = head[5] === 1;
    const u16 = (b: Buffer, o: number) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u32 = (b: Buffer, o: number) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
    const phoff = is64 ? Number(le ? head.readBigUInt64LE(32) : head.readBigUInt64BE(32)) : u32(head, 28);
    const phentsize = u16(head, is64 ? 54 : 42);
    const phnum = u16(head, is64 ? 56 : 44);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    const PT_INTERP = 3;
    for (let i = 0; i < phnum; i++) if (u32(table, i * phentsize) === PT_INTERP) return false;
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The static busybox the test images are built from (test/support/rootfs-image.ts), if this machine has one. */
export function staticBusybox(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const found = findInPath('busybox', env);
  return found && isStaticElf(found) ? found : undefined;
}

/** Where Debian's `faketime` package (and a source build) put the library the tests preload into an agent. */
const LIBFAKETIME_DIRS = [
  '/usr/lib/x86_64-linux-gnu/faketime',
  '/usr/lib/aarch64-linux-gnu/faketime',
  '/usr/lib/faketime',
  '/usr/local/lib/faketime',
];

/** libfaketime.so.1, if this machine has it: LD_PRELOADed, it steps a process's wall clock at run time. */
export function libfaketime(): string | undefined {
  for (const dir of LIBFAKETIME_DIRS) {
    const candidate = join(dir, 'libfaketime.so.1');
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here: the next directory
    }
  }
  return undefined;
}

/** Where Debian's `chromium` package puts its launcher. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/**
 * The chromium the dashboard's browser tests drive (test/support/browser.ts), if this machine has one: `chromium` on
 * PATH first (so a test can offer another build, or hide it), else Debian's own launcher, which a user's PATH may
 * lack when it was reduced. Only Debian's package is meant (playwright-core downloads no browser here).
 */
export function chromiumExecutable(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const found = findInPath('chromium', env);
  if (found) return found;
  try {
    if (!statSync(DEBIAN_CHROMIUM).isFile()) return undefined;
    accessSync(DEBIAN_CHROMIUM, constants.X_OK);
    return DEBIAN_CHROMIUM;
  } catch {
    return undefined;
  }
}

/**
 * The ARM architectures the package is built for, as dpkg names them: ELF class and e_machine, qemu's name, the
 * binfmt_misc flags and the qemu release their tests need (see emulationMissing).
 */
const EMULATED = {
  arm64: { elfClass: 2, machine: 0xb7, qemu: 'qemu-aarch64', flags: 'F', minQemu: 0 },
  armhf: { elfClass: 1, machine: 0x28, qemu: 'qemu-arm', flags: 'OF', minQemu: 10 },
} as const;

export type EmulatedArch = keyof typeof EMULATED;

const BINFMT_DIR = '/proc/sys/fs/binfmt_misc';

/** What .ci/run does for it: Debian's qemu, registered as systemd-binfmt registers it at boot (flags O, P, F). */
const fixFor = (arch: EmulatedArch) =>
  `apt-get install ${arch === 'armhf' ? '-t bookworm-backports ' : ''}qemu-user-static binfmt-support, then /lib/systemd/systemd-binfmt /usr/lib/binfmt.d/${EMULATED[arch].qemu}.conf; .ci/run does both`;

/** Why a flag is needed, for the message. */
const FLAG_NEEDS: Record<string, string> = {
  F: 'the kernel then looks the interpreter up in the container, which has none, and no program runs there',
  O: "Debian 13's systemd executes its units through /proc/self/fd of a close-on-exec descriptor, which the kernel then refuses, and no unit starts",
};

/** The release of the qemu at `interpreter` (its major version), or undefined when it does not say. */
export function qemuMajorVersion(interpreter: string): number | undefined {
  try {
    const r = spawnSync(realpathSync(interpreter), ['--version'], { encoding: 'utf8', timeout: 10_000 });
    const m = /version (\d+)\./.exec(r.stdout ?? '');
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why this machine cannot run `arch`'s programs in the tests' containers (the fix included), or undefined when it
 * can: natively, or through a binfmt_misc entry that is enabled and matches that architecture's ELF header, with:
 * - F (fix-binary): the kernel opens qemu when it is registered. Without it, it looks qemu up when a program starts,
 *   in the program's root: inside a container (or debootstrap's chroot) there is none, and every program fails.
 * - armhf only, O (open-binary): the kernel hands qemu the program as an open file. Debian 13's systemd (the armhf
 *   image) executes its executor as /proc/self/fd/N of a close-on-exec descriptor, a path no interpreter could open
 *   after the exec: without O the kernel refuses such an exec (ENOENT), and every unit fails. Debian's
 *   /usr/lib/binfmt.d has O; update-binfmts (binfmt-support, used where systemd is not init) registers without it.
 * - armhf only, qemu 10 (bookworm-backports): Debian 12's 7.2 refuses clone() with CLONE_PIDFD (EINVAL), which Debian
 *   13's glibc uses for systemd's pidfd_spawn(), and no unit starts. 10.0 was tried and works; 8 and 9 were not tried.
 * Any registration counts (Debian's, `docker run --privileged tonistiigi/binfmt`), not only Debian's names.
 */
export function emulationMissing(
  arch: EmulatedArch,
  hostArch: string,
  binfmtDir = BINFMT_DIR,
  qemuVersion: (interpreter: string) => number | undefined = qemuMajorVersion,
): string | undefined {
  if (hostArch === arch) return undefined;
  const want = EMULATED[arch];
  if (!existsSync(join(binfmtDir, 'status')))
    return `binfmt_misc is not mounted, so no ${arch} program runs here (mount -t binfmt_misc binfmt_misc ${binfmtDir}; ${fixFor(arch)})`;
  let shortfall: string | undefined;
  for (const name of readdirSync(binfmtDir)) {
    if (name === 'status' || name === 'register') continue;
    let text: string;
    try {
      text = readFileSync(join(binfmtDir, name), 'utf8');
    } catch {
      continue;
    }
    const field = (key: string) => new RegExp(`^${key}[ :]\\s*(\\S*)`, 'm').exec(text)?.[1] ?? '';
    const magic = Buffer.from(field('magic'), 'hex');
    const offset = Number(field('offset') || '0');
    // ELF magic at offset 0, then EI_CLASS at 4 and e_machine (little-endian) at 18.
    if (
      offset !== 0 ||
      magic.length < 20 ||
      magic.readUInt32BE(0) !== 0x7f454c46 ||
      magic[4] !== want.elfClass ||
      magic.readUInt16LE(18) !== want.machine
    )
      continue;
    if (!/^enabled$/m.test(text)) {
      shortfall ??= `binfmt_misc's ${name} for ${arch} programs is disabled (${fixFor(arch)})`;
      continue;
    }
    const missing = [...want.flags].filter((f) => !field('flags').includes(f));
    if (missing.length > 0) {
      shortfall = `binfmt_misc's ${name} runs ${arch} programs without the ${missing.join(' and ')} flag${missing.length > 1 ? 's' : ''}: ${missing.map((f) => FLAG_NEEDS[f]).join('; ')} (${fixFor(arch)})`;
      continue;
    }
    const interpreter = field('interpreter');
    const version = want.minQemu > 0 ? qemuVersion(interpreter) : undefined;
    if (want.minQemu > 0 && (version === undefined || version < want.minQemu)) {
      shortfall = `binfmt_misc's ${name} runs ${arch} programs with qemu ${version ?? '(of no known version)'} (${interpreter}): Debian 13's systemd needs qemu ${want.minQemu}, as older ones refuse clone() with CLONE_PIDFD and no unit starts (${fixFor(arch)})`;
      continue;
    }
    return undefined;
  }
  return shortfall ?? `no binfmt_misc entry runs ${arch} programs here (${fixFor(arch)})`;
}

let dpkgArch: string | undefined;
/** dpkg's name for this machine's architecture (`uname -m`'s when there is no dpkg). */
function hostDpkgArch(): string {
  if (dpkgArch === undefined) {
    const r = spawnSync('dpkg', ['--print-architecture'], { encoding: 'utf8' });
    dpkgArch =
      r.status === 0
        ? r.stdout.trim()
        : (({ x86_64: 'amd64', aarch64: 'arm64', armv7l: 'armhf' } as Record<string, string>)[
            spawnSync('uname', ['-m'], { encoding: 'utf8' }).stdout.trim()
          ] ?? '');
  }
  return dpkgArch;
}

/**
 * The tests drive Docker both through the CLI (`docker import`, `docker ps`) and through dockerode on the same
 * endpoint, so the requirement is "the CLI is on PATH and its engine answers". `docker version` asks the engine that
 * DOCKER_HOST names, else /var/run/docker.sock: the same endpoint src/runtime/container-engine.ts tries first.
 */
function dockerMissing(env: NodeJS.ProcessEnv): string | undefined {
  const where = env.DOCKER_HOST ? `DOCKER_HOST=${env.DOCKER_HOST}` : '/var/run/docker.sock';
  const cli = findInPath('docker', env);
  if (!cli)
    return `no Docker engine answered: the docker CLI is not installed (apt-get install docker.io, start dockerd)`;
  const r = spawnSync(cli, ['version', '--format', '{{.Server.Version}}'], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 10_000,
  });
  if (r.status === 0) return undefined;
  // A newcomer's usual case on a machine that has an engine: not in the docker group.
  if (/permission denied/i.test(r.stderr ?? ''))
    return `the Docker engine on ${where} refused this user (permission denied: usermod -aG docker $USER, then log in again)`;
  return `no Docker engine answered on ${where} (apt-get install docker.io, start dockerd)`;
}

/**
 * Rootful Podman's Docker-compatible API, which the agent and the tests talk to (test-engine.ts): the podman CLI on
 * PATH (the tests import images and list containers with it) and `podman --remote` answered on the socket.
 */
function podmanMissing(env: NodeJS.ProcessEnv): string | undefined {
  const socket = podmanSocket(env);
  const fix = `.ci/podman-setup.sh, or apt-get install podman catatonit and podman system service --time=0 unix://${socket} &`;
  const cli = findInPath('podman', env);
  if (!cli) return `no Podman engine answered: podman is not installed (${fix})`;
  if (!existsSync(socket)) return `no Podman engine answered: ${socket} does not exist (${fix})`;
  const r = spawnSync(cli, ['--remote', '--url', `unix://${socket}`, 'version', '--format', '{{.Server.Version}}'], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 10_000,
  });
  if (r.status === 0) return undefined;
  if (/permission denied/i.test(r.stderr ?? ''))
    return `Podman's socket ${socket} refused this user (permission denied: the suites run rootful Podman, as root)`;
  return `no Podman engine answered on ${socket} (${fix})`;
}

/** The sbin directories a user's PATH often lacks (Debian puts them only in root's). */
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'].join(delimiter);

const tool = (name: string, pkg: string) => (env: NodeJS.ProcessEnv) => {
  if (findInPath(name, env)) return undefined;
  const inSbin = findInPath(name, { PATH: SBIN });
  return inSbin
    ? `${name} is not on PATH (it is ${inSbin}: add its directory to PATH)`
    : `${name} is not installed (apt-get install ${pkg})`;
};

/** Per requirement: undefined when this machine has it, else why not and how to get it (one line). */
const CHECKS: Record<Requirement, (env: NodeJS.ProcessEnv) => string | undefined> = {
  docker: dockerMissing,
  podman: podmanMissing,
  minisign: tool('minisign', 'minisign'),
  // age and age-keygen come together (Debian's age package), but the tests run both: a PATH may hold one without the other.
  age: (env) => tool('age', 'age')(env) ?? tool('age-keygen', 'age')(env),
  promtool: tool('promtool', 'prometheus'),
  python3: tool('python3', 'python3'),
  openssl: tool('openssl', 'openssl'),
  // debootstrap lives in /usr/sbin, which a non-root PATH often lacks (the reason then says where it is).
  debootstrap: tool('debootstrap', 'debootstrap'),
  'dpkg-deb': tool('dpkg-deb', 'dpkg'),
  // The package's lean SQLite is compiled here (packaging/sqlite-addon-build.mjs) for the tests that run the store on it.
  'g++': (env) => tool('g++', 'g++')(env) ?? tool('make', 'make')(env),
  'systemd-analyze': tool('systemd-analyze', 'systemd'),
  chromium: (env) => (chromiumExecutable(env) ? undefined : 'chromium is not installed (apt-get install chromium)'),
  faketime: () => (libfaketime() ? undefined : 'libfaketime.so.1 is not installed (apt-get install faketime)'),
  busybox: (env) =>
    staticBusybox(env)
      ? undefined
      : findInPath('busybox', env)
        ? 'busybox on PATH is not statically linked (apt-get install busybox-static)'
        : 'no static busybox on PATH (apt-get install busybox-static)',
  'qemu-arm64': () => emulationMissing('arm64', hostDpkgArch()),
  'qemu-armhf': () => emulationMissing('armhf', hostDpkgArch()),
  root: () =>
    process.getuid?.() === 0
      ? undefined
      : `not running as root (uid ${process.getuid?.()}; run the tests as root, e.g. sudo npm test)`,
};

// Once per process and environment: a test file that hides a tool (changes PATH) gets its own answer, and the Docker
// engine is asked once per worker, not once per suite. globalThis, not module state: vitest re-evaluates modules per file.
const CACHE_KEY = Symbol.for('keystone.test.requirement-checks');
type Cache = Map<string, string | undefined>;
const cache: Cache = ((globalThis as Record<symbol, Cache | undefined>)[CACHE_KEY] ??= new Map());

/** Why `req` is missing here (the fix included), or undefined when it is met. */
export function missingReason(req: Requirement, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const key = `${req}\0${env.PATH ?? ''}\0${req === 'docker' ? (env.DOCKER_HOST ?? '') : req === 'podman' ? podmanSocket(env) : ''}\0${process.getuid?.()}`;
  if (!cache.has(key)) cache.set(key, CHECKS[req](env));
  return cache.get(key);
}
