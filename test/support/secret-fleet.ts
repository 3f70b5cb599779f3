// A fleet of enrolled devices reading secrets (SPEC §15–16) for end-to-end tests: real agents (dist/, as installed)
// over a real Git smart-HTTP server, each with the keys it made in its state directory, enrolled by
// `keystonectl enroll --label region=…` with the labels the operator vouches for, started with the same labels, and
// placed by fleet.toml in target "eu" or "us". The operator's checkout is `fx.dir`: its secrets are made by the real
// `keystonectl secret` binary (the value on stdin, as an operator pipes it; the checkout signed before each, and the
// command given `--trusted-key`), signed by `keystonectl sign`, pushed.
//
// And the means to look for a value everywhere a device shows or keeps anything: its log lines, its API (every data
// route of the dashboard, /metrics, the event stream), its state directory byte by byte (every Git object of any
// repository inside it decompressed), and every object and ref of the Git server's repositories.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { formatAgeIdentityFile } from '../../src/identity/age-identity-file.js';
import { identityPaths } from '../../src/identity/device-keys.js';
import { recordedSecretsRoot } from '../../src/runtime/secrets-root.js';
import { newAgeIdentity } from '../../src/secrets/age-codec.js';
import { readStatusNotes, type NotedStatusLine } from '../../src/fleet-view/status-notes-read.js';
import { apiOf, type AgentApi } from './agent-api.js';
import { AgentHarness, type AgentProcess } from './agent-harness.js';
import { runCtl, type CliResult } from './cli-run.js';
import { keystoneIdentity, POLL_MS, PUSH_TOKEN, READ_TOKEN, type DeviceIdentity } from './enrolled-fleet.js';
import { PROJECT_ROOT } from './example-repo.js';
import { GIT_ENV, gitIn } from './git-env.js';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from './stack-fixture.js';

const run = promisify(execFile);
const KEYSTONECTL_BIN = join(PROJECT_ROOT, 'bin', 'keystonectl.js');

export const sha256 = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const q = (s: string) => JSON.stringify(s);

/**
 * A recipe of a process that reads secrets and writes, in its work directory, the sha256 of each secret it got (never
 * a value): `<VAR>.sha` for each environment variable, `<path>.sha` for each secret file; then sleeps. Each file is
 * written whole (renamed into place), so a reader never sees half of one.
 */
export function secretReaderRecipe(
  name: string,
  o: {
    env?: Record<string, string>;
    files?: Array<{ secret: string; path: string }>;
    config?: Record<string, string>;
    version?: string;
  },
): string {
  const env = Object.entries(o.env ?? {});
  const files = o.files ?? [];
  const script = [
    ...env.map(([v]) => `printf %s "$${v}" | sha256sum | cut -c1-64 > .${v}.tmp && mv .${v}.tmp ${v}.sha`),
    ...files.map((f) => `sha256sum < ${f.path} | cut -c1-64 > .${f.path}.tmp && mv .${f.path}.tmp ${f.path}.sha`),
    'exec sleep 1000',
  ].join('; ');
  const lines = ['[metadata]', `name = ${q(`com.acme.${name}`)}`, `version = ${q(o.version ?? '1.0.0')}`, ''];
  if (o.config) lines.push('[config]', ...Object.entries(o.config).map(([k, v]) => `${k} = ${q(v)}`), '');
  lines.push('[lifecycle.run]', 'type = "process"', 'restart_policy = "always"', '');
  lines.push('[lifecycle.run.exec]', 'command = "sh"', `args = ["-c", ${q(script)}]`, '');
  if (env.length) lines.push('[lifecycle.run.exec.env]', ...env.map(([v, t]) => `${v} = ${q(t)}`), '');
  for (const f of files) lines.push('[[lifecycle.run.secrets]]', `name = ${q(f.secret)}`, `path = ${q(f.path)}`, '');
  lines.push('[lifecycle.run.security]', 'no_new_privileges = true', 'capabilities = []', '');
  return lines.join('\n');
}

/** A plan of these components (recipes/NAME.toml each), an entry's `config` as an inline table of strings. */
export const planOf = (components: Array<string | { name: string; config: Record<string, string> }>): string =>
  components
    .map((c) => (typeof c === 'string' ? { name: c, config: undefined } : c))
    .map(({ name, config }) => {
      const cfg = config
        ? `config = { ${Object.entries(config)
            .map(([k, v]) => `${k} = ${q(v)}`)
            .join(', ')} }\n`
        : '';
      return `[[components]]\nname = ${q(name)}\nrecipe = ${q(`recipes/${name}.toml`)}\n${cfg}`;
    })
    .join('\n');

/** `node bin/keystonectl.js ARGS` in `cwd` (the built CLI, as an operator runs it), `input` on its stdin. */
export function keystonectl(args: string[], cwd: string, input?: string | Uint8Array): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.KEYSTONE_AGE_IDENTITY;
    const child = spawn(process.execPath, [KEYSTONECTL_BIN, ...args], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

export interface DeviceSpec {
  name: string;
  labels: Record<string, string>;
}

export class SecretFleet {
  readonly harness = new Map<string, AgentHarness>();
  readonly agents = new Map<string, AgentProcess>();
  readonly identities = new Map<string, DeviceIdentity>();
  readonly labels = new Map<string, Record<string, string>>();
  readonly ports = new Map<string, number>();
  /** Repository files (path → text) written at every push, besides the fixture's own. */
  readonly files = new Map<string, string>();

  private constructor(
    readonly root: string,
    readonly server: GitHttpServer,
    readonly fleetBare: string,
    readonly reportsBare: string,
    readonly fx: StackFixture,
    /** The operator's age identity file (outside the repository); its recipient is in secrets/operators.txt. */
    readonly operatorKey: string,
    readonly operatorRecipient: string,
  ) {}

  static async create(): Promise<SecretFleet> {
    const root = mkdtempSync(join(tmpdir(), 'keystone-secrets-'));
    const server = await startGitHttpServer({ root: join(root, 'srv'), token: PUSH_TOKEN, readToken: READ_TOKEN });
    const fleetBare = server.createRepository('fleet');
    const reportsBare = server.createRepository('reports');
    const fx = await stackFixture({ signed: true, components: () => [sleeper('plain')] });
    mkdirSync(join(root, 'keys'), { mode: 0o700 });
    writeFileSync(join(root, 'read-token'), `${READ_TOKEN}\n`, { mode: 0o600 });
    writeFileSync(join(root, 'push-token'), `${PUSH_TOKEN}\n`, { mode: 0o600 });
    const keygen = await runCtl(['keygen', '--out', join(root, 'keys', 'enroll'), '--no-password'], root);
    if (keygen.code !== 0) throw new Error(`keygen: ${keygen.stderr}`);
    const operator = await newAgeIdentity();
    const operatorKey = join(root, 'keys', 'operator.key');
    writeFileSync(operatorKey, formatAgeIdentityFile(operator, Date.now()), { mode: 0o600 });
    mkdirSync(join(fx.dir, 'secrets'), { recursive: true });
    writeFileSync(join(fx.dir, 'secrets', 'operators.txt'), `# the test's operator\n${operator.recipient}\n`);
    await gitIn(fx.dir, ['init', '--quiet', '--initial-branch=main']);
    return new SecretFleet(root, server, fleetBare, reportsBare, fx, operatorKey, operator.recipient);
  }

  get enrollPub(): string {
    return join(this.root, 'keys', 'enroll.pub');
  }

  /** A fresh state directory for the device, its keys made (`keystone identity`), enrolled with its labels. */
  async enrol(d: DeviceSpec): Promise<DeviceIdentity> {
    const h = new AgentHarness();
    this.harness.set(d.name, h);
    this.labels.set(d.name, d.labels);
    this.ports.set(d.name, (await freePorts(1))[0]!);
    const id = await keystoneIdentity(h.stateDir, d.name);
    this.identities.set(d.name, id);
    const file = join(this.root, `${d.name}.identity.json`);
    writeFileSync(file, JSON.stringify(id) + '\n');
    const labels = Object.entries(d.labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    const r = await runCtl(
      ['enroll', '--key', join(this.root, 'keys', 'enroll.key'), '--identity', file, ...labels],
      this.fx.dir,
    );
    if (r.code !== 0) throw new Error(`enroll ${d.name}: ${r.stderr}`);
    return id;
  }

  /** Writes the fleet's files (fixture, `files`) into the checkout. */
  writeFiles(): void {
    this.fx.write();
    for (const [path, text] of this.files) {
      mkdirSync(join(this.fx.dir, path, '..'), { recursive: true });
      writeFileSync(join(this.fx.dir, path), text);
    }
  }

  /**
   * `keystonectl secret set NAME --target …` with the value on stdin (or `--file`), in the checkout; fails on a non-zero
   * exit. As an operator does: the checkout's files written, reviewed and signed first (`secret set` takes fleet.toml,
   * the revocations, the operators and a target's key only signed), then the command with `--trusted-key`.
   */
  async secretSet(name: string, targets: string[], value: string, o: { viaFile?: boolean } = {}): Promise<CliResult> {
    this.writeFiles();
    await this.fx.sign();
    const args = [
      'secret',
      'set',
      name,
      ...targets.flatMap((t) => ['--target', t]),
      '--enrollment-key',
      this.enrollPub,
      ...this.fx.trustArgs,
    ];
    let r: CliResult;
    if (o.viaFile) {
      const file = join(this.root, `value-${name}`);
      writeFileSync(file, value, { mode: 0o600 });
      r = await keystonectl([...args, '--file', file], this.fx.dir);
      rmSync(file);
    } else r = await keystonectl(args, this.fx.dir, value);
    if (r.code !== 0) throw new Error(`secret set ${name}: exit ${r.code}: ${r.stderr}${r.stdout}`);
    return r;
  }

  /** `keystonectl secret rekey --target T --json` with the operator's identity, the checkout signed first; its JSON answer. */
  async rekey(target: string): Promise<{
    recipient: string;
    previousRecipient: string | null;
    readers: string[];
    removed: string[] | null;
    reencrypted: string[];
    text: string;
  }> {
    this.writeFiles();
    await this.fx.sign();
    const r = await keystonectl(
      [
        'secret',
        'rekey',
        '--target',
        target,
        '--enrollment-key',
        this.enrollPub,
        '--identity',
        this.operatorKey,
        '--json',
        ...this.fx.trustArgs,
      ],
      this.fx.dir,
    );
    if (r.code !== 0) throw new Error(`secret rekey --target ${target}: exit ${r.code}: ${r.stderr}${r.stdout}`);
    return {
      ...(JSON.parse(r.stdout) as {
        recipient: string;
        previousRecipient: string | null;
        readers: string[];
        removed: string[] | null;
        reencrypted: string[];
      }),
      text: r.stdout + r.stderr,
    };
  }

  /** Writes the files (then `edit`), signs, commits and pushes to main; returns the commit. */
  async push(message: string, edit?: (dir: string) => void): Promise<string> {
    this.writeFiles();
    edit?.(this.fx.dir);
    await this.fx.sign();
    await gitIn(this.fx.dir, ['add', '-A']);
    await gitIn(this.fx.dir, ['commit', '--quiet', '--allow-empty', '-m', message]);
    await gitIn(this.fx.dir, ['push', '--quiet', this.fleetBare, 'HEAD:refs/heads/main']);
    return gitIn(this.fx.dir, ['rev-parse', 'HEAD']);
  }

  start(device: string): AgentProcess {
    const h = this.harness.get(device)!;
    const labels = Object.entries(this.labels.get(device)!).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    const agent = h.start({
      repo: this.server.url('fleet'),
      plan: undefined,
      trustArgs: this.fx.trustArgs,
      args: [
        '--ref',
        'main',
        '--poll',
        `${POLL_MS}ms`,
        '--device',
        device,
        ...labels,
        '--status',
        'git-notes',
        '--git-token-file',
        join(this.root, 'read-token'),
        '--status-repo',
        this.server.url('reports'),
        '--status-token-file',
        join(this.root, 'push-token'),
        '--enrollment-key',
        this.enrollPub,
        '--listen',
        `127.0.0.1:${this.ports.get(device)!}`,
      ],
    });
    this.agents.set(device, agent);
    return agent;
  }

  h(device: string): AgentHarness {
    return this.harness.get(device)!;
  }

  api(device: string): AgentApi {
    return apiOf(this.h(device).stateDir, this.ports.get(device)!);
  }

  applied(device: string): string | undefined {
    return this.h(device).appliedRevision()?.id;
  }

  /** Waits until the device runs `commit`; fails at once when it refuses it or its apply fails. */
  async waitApplied(device: string, commit: string, deadlineMs = 30_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      if (this.applied(device) === commit) return;
      const last = this.h(device)
        .history()
        .find((e) => e.revision === commit && (e.outcome === 'rejected' || e.outcome === 'failure'));
      if (last || Date.now() > deadline)
        throw new Error(
          `${last ? `${device} ${last.outcome === 'rejected' ? 'refused' : 'failed to apply'} ${commit.slice(0, 8)}: ${last.summary}` : `timed out after ${deadlineMs} ms waiting for ${device} to run ${commit.slice(0, 8)}`}\n${this.agents.get(device)?.tail()}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async note(commit: string, device: string): Promise<NotedStatusLine | undefined> {
    return (await readStatusNotes(this.reportsBare, commit)).find((l) => l.context === `keystone/${device}`);
  }

  /** Waits for the device's `state` note on `commit`; fails at once when it reports another final state instead. */
  async reported(commit: string, device: string, state: string, deadlineMs = 30_000): Promise<NotedStatusLine> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const l = await this.note(commit, device);
      if (l?.state === state) return l;
      const other = l && l.state !== 'pending';
      if (other || Date.now() > deadline)
        throw new Error(
          `${other ? `${device} reported ${l.state}` : `timed out after ${deadlineMs} ms waiting for ${device}'s ${state} note`} on ${commit.slice(0, 8)} (its note: ${JSON.stringify(l?.description)})\n${this.agents.get(device)?.tail()}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The device's age identity file (what root on the device holds). */
  ageKeyOf(device: string): string {
    return identityPaths(this.h(device).stateDir).ageKey;
  }

  /** A file of the checkout at a commit (Git keeps every old ciphertext). */
  async fileAt(commit: string, path: string): Promise<Buffer> {
    return (
      await run('git', ['-C', this.fx.dir, 'show', `${commit}:${path}`], {
        env: GIT_ENV,
        encoding: 'buffer',
        maxBuffer: 64 * 1024 * 1024,
      })
    ).stdout;
  }

  /**
   * Where the device's agent writes secret files: the directory it made (mkdtemp, on tmpfs where there is one) and
   * recorded in its state directory at the first of them (secrets-root.ts); undefined before.
   */
  secretsRootOf(device: string): string | undefined {
    return recordedSecretsRoot(this.h(device).stateDir);
  }

  async cleanup(): Promise<void> {
    // The agents are killed, not stopped: the secret files of what they ran stay on tmpfs, outside the state directories.
    const roots = [...this.harness.keys()].flatMap((d) => {
      const root = this.secretsRootOf(d);
      return root !== undefined && !root.startsWith(this.h(d).stateDir + '/') ? [root] : [];
    });
    for (const h of this.harness.values()) await h.cleanup().catch(() => {});
    for (const root of roots) rmSync(root, { recursive: true, force: true });
    await this.server.stop();
    this.fx.cleanup();
    rmSync(this.root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Looking for values.

/** Where a value was found: a description of the place, and which value (by its label, never the value). */
export interface Finding {
  where: string;
  value: string;
}

/** The values, each with a label that can be printed. */
export type Needles = ReadonlyMap<string, string>;

export function findIn(where: string, haystack: string | Uint8Array, needles: Needles): Finding[] {
  const buf =
    typeof haystack === 'string'
      ? Buffer.from(haystack)
      : Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength);
  const out: Finding[] = [];
  for (const [label, value] of needles) if (buf.includes(Buffer.from(value))) out.push({ where, value: label });
  return out;
}

/** Every Git object of the repository at `gitDir` (a bare one or a `.git`), decompressed, reachable or not. */
export async function allGitObjects(gitDir: string): Promise<Buffer> {
  const r = await run('git', ['--git-dir', gitDir, 'cat-file', '--batch-all-objects', '--batch'], {
    env: GIT_ENV,
    encoding: 'buffer',
    maxBuffer: 512 * 1024 * 1024,
  });
  return r.stdout;
}

const isGitDir = (dir: string): boolean => {
  try {
    return statSync(join(dir, 'objects')).isDirectory() && statSync(join(dir, 'HEAD')).isFile();
  } catch {
    return false;
  }
};

/**
 * Every file under `dir`, byte for byte (links are not followed: a secret file's link in a work directory points at
 * the secret itself, which is where it belongs), minus the paths `skip` accepts; every Git repository found inside is
 * also read object by object (packed objects are compressed: a raw grep would not see into them).
 */
export async function grepTree(
  dir: string,
  needles: Needles,
  skip: (path: string) => boolean = () => false,
): Promise<{ findings: Finding[]; files: number; bytes: number }> {
  const findings: Finding[] = [];
  let files = 0;
  let bytes = 0;
  const walk = async (at: string): Promise<void> => {
    if (skip(at)) return;
    const st = lstatSync(at, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isSymbolicLink()) {
      findings.push(...findIn(`${relative(dir, at)} (link text)`, readlinkSync(at), needles));
      return;
    }
    if (st.isDirectory()) {
      if (isGitDir(at))
        findings.push(...findIn(`${relative(dir, at) || '.'} (every Git object)`, await allGitObjects(at), needles));
      for (const name of readdirSync(at)) await walk(join(at, name));
      return;
    }
    if (!st.isFile()) return;
    let content: Buffer;
    try {
      content = readFileSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // gone meanwhile (a temporary file)
      throw e;
    }
    files++;
    bytes += content.length;
    findings.push(...findIn(relative(dir, at), content, needles));
  };
  await walk(dir);
  return { findings, files, bytes };
}

/** Where `path` is mounted, and how (the longest mount point above it in /proc/self/mounts). */
export function mountOf(path: string): { mountPoint: string; fsType: string } | undefined {
  let best: { mountPoint: string; fsType: string } | undefined;
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, mp, fsType] = line.split(' ');
    if (!mp || !fsType) continue;
    const mountPoint = mp.replace(/\\040/g, ' ');
    if (
      (path === mountPoint || path.startsWith(mountPoint === '/' ? '/' : `${mountPoint}/`)) &&
      (!best || mountPoint.length >= best.mountPoint.length)
    )
      best = { mountPoint, fsType };
  }
  return best;
}

/** Whether /run or /dev/shm is a tmpfs here (the agent then writes secret files on one). */
export function hasTmpfs(): boolean {
  return ['/run', '/dev/shm'].some((p) => mountOf(p)?.mountPoint === p && mountOf(p)?.fsType === 'tmpfs');
}

/** The uid a process runs as (its real uid, /proc/PID/status). */
export function uidOf(pid: number): number {
  const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]);
}

/** A process's environment (root reads any; the test's own user, its own processes). */
export function environOf(pid: number): Map<string, string> | undefined {
  try {
    return new Map(
      readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string]),
    );
  } catch {
    return undefined;
  }
}

/** A realpath that does not throw: undefined when the path (or its link's target) is gone. */
export function realpathOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The Server-Sent Events of GET /v1/events, collected as text until `stop()`: what the dashboard's live view reads
 * while something happens.
 */
export function collectEvents(port: number, token: string): { text(): string; stop(): Promise<string> } {
  const ctrl = new AbortController();
  let text = '';
  const done = (async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/events`, {
        headers: { authorization: `Bearer ${token}` },
        signal: ctrl.signal,
      });
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value, { stream: true });
      }
    } catch (e) {
      if ((e as Error).name !== 'AbortError') text += `\n[stream error: ${(e as Error).message}]`;
    }
  })();
  return {
    text: () => text,
    async stop() {
      ctrl.abort();
      await done;
      return text;
    },
  };
}
