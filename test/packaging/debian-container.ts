// A Debian container to install the package in: either with no init system (docker's tini as PID 1, which only
// reaps), or booting systemd as PID 1; of this machine's architecture or, under qemu-user (binfmt_misc), of another
// (debian-image.ts). The packages and the project (read-only, for the example repository) are mounted; everything
// else a test does is a shell command in the container.
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { debianImage, type DebianArch } from './debian-image.js';

const run = promisify(execFile);

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Capability names by number (linux/capability.h), for the ones this machine withholds. */
const CAPABILITIES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
];

/**
 * The options that let systemd run as PID 1 in a container: every capability this machine has (not --privileged,
 * which asks for all of them and fails where the engine itself lacks some, as CAP_SYS_RESOURCE in this sandbox),
 * no seccomp filter, a writable /run, and the cgroup tree: on cgroup v1 (this machine) the host's, writable, in the
 * host's cgroup namespace, which systemd 252 runs in ("Tainted: cgroupsv1"). On cgroup v2 a private namespace and
 * --privileged (not tried here).
 */
function systemdOptions(): string[] {
  const v2 =
    spawnSync('docker', ['info', '--format', '{{.CgroupVersion}}'], { encoding: 'utf8' }).stdout.trim() === '2';
  if (v2)
    return [
      '--privileged',
      '--cgroupns=private',
      '--tmpfs',
      '/run',
      '--tmpfs',
      '/run/lock',
      '--stop-signal',
      'SIGRTMIN+3',
    ];
  const bounding = BigInt(
    `0x${/^CapBnd:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`,
  );
  const withheld = CAPABILITIES.filter((_, i) => (bounding & (1n << BigInt(i))) === 0n);
  return [
    '--cap-add',
    'ALL',
    ...withheld.flatMap((c) => ['--cap-drop', c]),
    '--security-opt',
    'seccomp=unconfined',
    '--security-opt',
    'apparmor=unconfined',
    '--cgroupns=host',
    '-v',
    '/sys/fs/cgroup:/sys/fs/cgroup:rw',
    '--tmpfs',
    '/run',
    '--tmpfs',
    '/run/lock',
    '--stop-signal',
    'SIGRTMIN+3',
  ];
}

export class DebianContainer {
  private constructor(readonly name: string) {}

  /**
   * `debs` (when given) is mounted at /debs, the project at /src (read-only). Without systemd, root has
   * CAP_SYS_PTRACE on top of docker's defaults, as root on a device does: the purge reads the components' environment
   * to find them. `arch` picks the image (debian-image.ts); another architecture than this machine's runs under qemu,
   * systemd included, with the same options (Debian 13's systemd 257 boots on this machine's cgroup v1 as 252 does,
   * "Tainted: cgroupsv1"). `mounts` are more host directories, read-write, each at its `container` path.
   */
  static async start(opts: {
    systemd: boolean;
    debs?: string;
    arch?: DebianArch;
    mounts?: readonly { host: string; container: string }[];
  }): Promise<DebianContainer> {
    const image = debianImage(opts.arch);
    const name = `ks-deb-${image.arch}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const common = [
      'run',
      '-d',
      '--name',
      name,
      '--label',
      'io.keystone.test=packaging',
      ...(image.native ? [] : ['--platform', image.platform]),
    ];
    const mounts = [
      ...(opts.debs ? ['-v', `${opts.debs}:/debs:ro`] : []),
      '-v',
      `${PROJECT_ROOT}:/src:ro`,
      ...(opts.mounts ?? []).flatMap((m) => ['-v', `${m.host}:${m.container}`]),
    ];
    const args = opts.systemd
      ? [...common, ...systemdOptions(), ...mounts, image.tag, '/lib/systemd/systemd']
      : [...common, '--init', '--cap-add', 'SYS_PTRACE', ...mounts, image.tag, 'sleep', 'infinity'];
    await run('docker', args, { timeout: 60_000 });
    return new DebianContainer(name);
  }

  /** `sh -c script` in the container, as root. */
  async exec(script: string, timeoutMs = 120_000): Promise<Result> {
    try {
      const { stdout, stderr } = await run('docker', ['exec', this.name, 'sh', '-c', script], {
        timeout: timeoutMs,
        maxBuffer: 32 * 1024 * 1024,
      });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const err = e as Error & { code?: number | string; stdout?: string; stderr?: string };
      if (typeof err.code !== 'number') throw e;
      return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
    }
  }

  /** exec, failing the test with the output unless it exits 0; its stdout. */
  async must(script: string, timeoutMs?: number): Promise<string> {
    const r = await this.exec(script, timeoutMs);
    if (r.code !== 0) throw new Error(`in the container, \`${script}\` exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  }

  async remove(): Promise<void> {
    await run('docker', ['rm', '-f', '-v', this.name], { timeout: 60_000 }).catch(() => undefined);
  }
}

/** Calls `probe` until it returns a value (not undefined) or the deadline passes; the last miss is in the error. */
export async function pollUntil<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}
