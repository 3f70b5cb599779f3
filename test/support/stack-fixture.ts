// A desired-state repository in a temp directory for end-to-end agent tests: the example's four-component stack
// (influxdb ← api ← web hard, influxdb ⇠ telemetry ordering) run by the real stand-in programs of `artifacts/`,
// but on ports the OS hands out, so that test files (and concurrent tests) never collide.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { directoryRevisionId } from '../../src/source/directory-source.js';
import { runCtl } from './cli-run.js';
import { freePorts } from './free-ports.js';
import { PROJECT_ROOT } from './example-repo.js';
import { recipeRuntime } from './test-engine.js';

export interface HealthSpec {
  check: string;
  interval: string;
  timeout?: string;
  failureThreshold: number;
}

export interface DependencySpec {
  /** The providing component's plan name (the fixture maps it to that component's recipe name). */
  component: string;
  type: 'hard' | 'ordering';
  version?: string;
}

/** One component of the plan and its recipe. */
export interface ComponentSpec {
  /** The name on the device (plan entry); the recipe is `recipes/<name>.toml`, named `com.acme.<name>`. */
  name: string;
  version: string;
  /** A stand-in program of `artifacts/` copied into the work directory (pinned by its sha256). */
  artifact?: string;
  command: string;
  args: string[];
  install?: string;
  restartPolicy?: 'always' | 'on-failure' | 'never';
  health?: HealthSpec;
  dependencies?: DependencySpec[];
  /**
   * Run as a container instead of a process: `[lifecycle.run] type = "container"` with this as
   * `[lifecycle.run.container]` (`command`/`args` above are then ignored; see `asContainer`).
   */
  container?: ContainerFields;
  /** `[lifecycle.run] update_strategy` (containers). */
  updateStrategy?: 'stop-first' | 'start-first';
  /** `[lifecycle.run] replicas` (containers). */
  replicas?: number;
  /** `[lifecycle.run.security] user` (processes); absent: the device's default unprivileged user. */
  user?: string;
  /** The recipe's `[config]` (values for `{{config.KEY}}` in the install script, args, env …). */
  config?: Record<string, string>;
  /** `[lifecycle.update]`: the update lock (relative to the work directory) and its `lock_timeout` (SPEC §19). */
  updateLock?: { lock: string; timeout?: string };
}

/** The fields of `[lifecycle.run.container]`, spelled as in the recipe. `pull_policy` defaults to "never" here (no registry in tests). */
export interface ContainerFields {
  image: string;
  runtime?: 'auto' | 'docker' | 'podman';
  pull_policy?: 'always' | 'if-not-present' | 'never';
  network_mode?: string;
  user?: string;
  privileged?: boolean;
  command?: string[];
  env?: Record<string, string>;
  ports?: Array<{ host_port: number; container_port: number }>;
  mounts?: Array<{ source: string; target: string; read_only?: boolean }>;
  resources?: { memory_mb?: number; pids_limit?: number };
  capabilities?: string[];
  pid_mode?: string;
  devices?: string[];
}

export interface StackPorts {
  influxdb: number;
  api: number;
  web: number;
}

export interface StackFixture {
  /** The repository root (`--dir`). */
  dir: string;
  /** Repository-relative (`--plan`). */
  plan: string;
  ports: StackPorts;
  signed: boolean;
  /** `['--trusted-key', PUB]` when signed, else `['--allow-unsigned']`. */
  trustArgs: string[];
  /** The components in plan order (edit through the methods below, then `write()`). */
  components: ComponentSpec[];
  spec(name: string): ComponentSpec;
  /** Adds components at the end of the plan and writes the repository. */
  add(...specs: ComponentSpec[]): void;
  /** Removes a component from the plan (its recipe file too) and writes the repository. */
  remove(name: string): void;
  /** Sets a component's version (and api's --version-label) and writes the repository. */
  bumpVersion(name: string, version: string): void;
  /** Rewrites every recipe and the plan from `components` (the files the agent's watcher sees). */
  write(): void;
  recipePath(name: string): string;
  /** Replaces text in a repository file (`from` must occur). */
  edit(file: string, from: string | RegExp, to: string): void;
  /** keystonectl sign: SHA256SUMS + SHA256SUMS.minisig (signed fixtures only); `args` such as `['--ref', 'main']`. */
  sign(args?: string[]): Promise<void>;
  /** The revision id the directory source will give the repository's current content. */
  revisionId(): Promise<string>;
  cleanup(): void;
}

export { freePorts };

/** Health probing for tests: fast, with a generous threshold so a loaded machine does not fail a start budget (10 s). */
const FAST = { interval: '200ms', timeout: '1s', failureThreshold: 50 } as const;

/** The four components of the example (plans/edge-processes.toml) on the given ports. */
export function fourStack(ports: StackPorts): ComponentSpec[] {
  const db = `http://127.0.0.1:${ports.influxdb}`;
  const api = `http://127.0.0.1:${ports.api}`;
  return [
    {
      name: 'influxdb',
      version: '2.7.5',
      artifact: 'fake-influxdb.mjs',
      install: 'mkdir -p data',
      command: 'node',
      args: ['fake-influxdb.mjs', '--port', String(ports.influxdb), '--start-delay', '300', '--data', 'data'],
      health: { ...FAST, check: `${db}/health` },
    },
    {
      name: 'api',
      version: '1.4.0',
      artifact: 'fake-api.mjs',
      command: 'node',
      args: ['fake-api.mjs', '--port', String(ports.api), '--db', db, '--version-label', '1.4.0'],
      health: { ...FAST, check: `${api}/health` },
      dependencies: [{ component: 'influxdb', type: 'hard', version: '>=2.7.0' }],
    },
    {
      name: 'telemetry',
      version: '1.29.0',
      artifact: 'fake-telemetry.mjs',
      command: 'node',
      args: ['fake-telemetry.mjs', '--db', db, '--status', 'telemetry.status', '--interval', '500'],
      // A cmd: check as in the example, but a shell builtin rather than a second node per probe.
      health: { check: 'cmd:test -s telemetry.status', interval: '500ms', timeout: '1s', failureThreshold: 20 },
      dependencies: [{ component: 'influxdb', type: 'ordering' }],
    },
    {
      name: 'web',
      version: '1.27.0',
      artifact: 'fake-web.mjs',
      command: 'node',
      args: ['fake-web.mjs', '--port', String(ports.web), '--api', api],
      health: { ...FAST, check: `http://127.0.0.1:${ports.web}/health` },
      dependencies: [{ component: 'api', type: 'hard' }],
    },
  ];
}

/** A container component (no artifact): `container` becomes its `[lifecycle.run.container]`. */
export function asContainer(
  name: string,
  version: string,
  container: ContainerFields,
  more: Partial<Omit<ComponentSpec, 'name' | 'version' | 'container'>> = {},
): ComponentSpec {
  return { command: '', args: [], ...more, name, version, container };
}

/**
 * The example's `web` as a container, as in recipes/com.acme.web.toml: busybox httpd serving the image's /www on the
 * host network (which the agent allows only with --allow-host-namespaces) on `ports.web`, as nobody, with an http
 * check against that port; hard dependency on api.
 */
export function webContainer(ports: StackPorts, image: string): ComponentSpec {
  return asContainer(
    'web',
    '1.27.0',
    {
      image,
      network_mode: 'host',
      user: '65534:65534',
      command: ['httpd', '-f', '-p', String(ports.web), '-h', '/www'],
      resources: { memory_mb: 64, pids_limit: 32 },
    },
    {
      health: { ...FAST, check: `http://127.0.0.1:${ports.web}/` },
      dependencies: [{ component: 'api', type: 'hard' }],
    },
  );
}

/** The four-component stack with `web` a container of `image` (plans/edge.toml). */
export function containerStack(image: string): (ports: StackPorts) => ComponentSpec[] {
  return (ports) => fourStack(ports).map((c) => (c.name === 'web' ? webContainer(ports, image) : c));
}

/**
 * Exits at once with code 3 (no artifact), restart policy always: a crash loop. With `closedPort`, it gets a health
 * check that only a live process could pass (an endpoint on a port nobody listens on, failure_threshold 25 × 200 ms:
 * a 5 s start budget). That keeps the apply's outcome deterministic: without a check, a component counts as healthy
 * once it has stayed up 200 ms, and on a loaded machine an instant exit can be noticed later than that.
 */
export function crasher(name = 'crasher', closedPort?: number): ComponentSpec {
  return {
    name,
    version: '1.0.0',
    command: 'node',
    args: ['-e', 'process.exit(3)'],
    restartPolicy: 'always',
    ...(closedPort !== undefined && {
      health: {
        check: `http://127.0.0.1:${closedPort}/never`,
        interval: '200ms',
        timeout: '150ms',
        failureThreshold: 25,
      },
    }),
  };
}

/**
 * Runs, but its http check targets a closed port: never healthy. Budget = interval × threshold = 1 s. The path is
 * /never so that even a stand-in of another test that came to listen on that port would answer 404, not 200.
 */
export function neverHealthy(name: string, closedPort: number, dependencies: DependencySpec[] = []): ComponentSpec {
  return {
    name,
    version: '1.0.0',
    command: 'sleep',
    args: ['1000'],
    health: { check: `http://127.0.0.1:${closedPort}/never`, interval: '200ms', timeout: '150ms', failureThreshold: 5 },
    dependencies,
  };
}

/** A plain long-running process without a check (healthy once it has stayed up a moment). */
export function sleeper(name: string, dependencies: DependencySpec[] = []): ComponentSpec {
  return { name, version: '1.0.0', command: 'sleep', args: ['1000'], dependencies };
}

/** A component that forks: a background grandchild beside the shell's own child. */
export function forker(name = 'forker'): ComponentSpec {
  return { name, version: '1.0.0', command: 'sh', args: ['-c', 'sleep 1000 & sleep 1000'] };
}

const q = (s: string) => JSON.stringify(s);

function renderRecipe(
  c: ComponentSpec,
  byName: Map<string, ComponentSpec>,
  artifactSha: (file: string) => string,
): string {
  const lines = ['[metadata]', `name = ${q(`com.acme.${c.name}`)}`, `version = ${q(c.version)}`, ''];
  if (c.artifact)
    lines.push(
      '[[artifacts]]',
      `uri = ${q(`../artifacts/${c.artifact}`)}`,
      `sha256 = ${q(artifactSha(c.artifact))}`,
      'unpack = false',
      '',
    );
  if (c.install) lines.push('[lifecycle.install]', `script = ${q(c.install)}`, 'timeout = "30s"', '');
  if (c.updateLock)
    lines.push(
      '[lifecycle.update]',
      `lock = ${q(c.updateLock.lock)}`,
      ...(c.updateLock.timeout !== undefined ? [`lock_timeout = ${q(c.updateLock.timeout)}`] : []),
      '',
    );
  if (c.config) lines.push('[config]', ...Object.entries(c.config).map(([k, v]) => `${k} = ${q(v)}`), '');
  if (c.container) lines.push(...renderContainer(c));
  else {
    lines.push('[lifecycle.run]', 'type = "process"', `restart_policy = ${q(c.restartPolicy ?? 'always')}`, '');
    lines.push('[lifecycle.run.exec]', `command = ${q(c.command)}`, `args = [${c.args.map(q).join(', ')}]`, '');
    // No user: as root the component runs as the device's default unprivileged user (nobody here) with no
    // capabilities; not root, as the agent's user.
    lines.push(
      '[lifecycle.run.security]',
      ...(c.user !== undefined ? [`user = ${q(c.user)}`] : []),
      'no_new_privileges = true',
      'capabilities = []',
      '',
    );
  }
  if (c.health) {
    lines.push('[lifecycle.run.health]', `check = ${q(c.health.check)}`, `interval = ${q(c.health.interval)}`);
    if (c.health.timeout) lines.push(`timeout = ${q(c.health.timeout)}`);
    lines.push(`failure_threshold = ${c.health.failureThreshold}`, '');
  }
  for (const d of c.dependencies ?? []) {
    if (!byName.has(d.component))
      throw new Error(`${c.name} depends on ${d.component}, which the fixture does not have`);
    lines.push('[[dependencies]]', `name = ${q(`com.acme.${d.component}`)}`);
    if (d.version) lines.push(`version = ${q(d.version)}`);
    lines.push(`type = ${q(d.type)}`, '');
  }
  return lines.join('\n');
}

/** `[lifecycle.run]` and `[lifecycle.run.container]` (with its sub-tables) of a container component. */
function renderContainer(c: ComponentSpec): string[] {
  const k = c.container!;
  const list = (xs: readonly string[]) => `[${xs.map(q).join(', ')}]`;
  const lines = ['[lifecycle.run]', 'type = "container"', `restart_policy = ${q(c.restartPolicy ?? 'always')}`];
  if (c.updateStrategy) lines.push(`update_strategy = ${q(c.updateStrategy)}`);
  if (c.replicas !== undefined) lines.push(`replicas = ${c.replicas}`);
  lines.push('', '[lifecycle.run.container]', `image = ${q(k.image)}`, `pull_policy = ${q(k.pull_policy ?? 'never')}`);
  // The engine the suites run against (KEYSTONE_TEST_ENGINE, test-engine.ts): on Podman, `runtime = "podman"`.
  const runtime = k.runtime ?? recipeRuntime();
  if (runtime) lines.push(`runtime = ${q(runtime)}`);
  if (k.network_mode) lines.push(`network_mode = ${q(k.network_mode)}`);
  if (k.user) lines.push(`user = ${q(k.user)}`);
  if (k.privileged !== undefined) lines.push(`privileged = ${k.privileged}`);
  if (k.command) lines.push(`command = ${list(k.command)}`);
  if (k.capabilities) lines.push(`capabilities = ${list(k.capabilities)}`);
  if (k.pid_mode) lines.push(`pid_mode = ${q(k.pid_mode)}`);
  if (k.devices) lines.push(`devices = ${list(k.devices)}`);
  lines.push('');
  if (k.env)
    lines.push('[lifecycle.run.container.env]', ...Object.entries(k.env).map(([n, v]) => `${n} = ${q(v)}`), '');
  if (k.resources) {
    lines.push('[lifecycle.run.container.resources]');
    if (k.resources.memory_mb !== undefined) lines.push(`memory_mb = ${k.resources.memory_mb}`);
    if (k.resources.pids_limit !== undefined) lines.push(`pids_limit = ${k.resources.pids_limit}`);
    lines.push('');
  }
  for (const p of k.ports ?? [])
    lines.push(
      '[[lifecycle.run.container.ports]]',
      `host_port = ${p.host_port}`,
      `container_port = ${p.container_port}`,
      '',
    );
  for (const m of k.mounts ?? []) {
    lines.push('[[lifecycle.run.container.mounts]]', `source = ${q(m.source)}`, `target = ${q(m.target)}`);
    if (m.read_only !== undefined) lines.push(`read_only = ${m.read_only}`);
    lines.push('');
  }
  return lines;
}

/** Signing times only move forward (the agent refuses a signature older than the last applied one). */
let lastSignedMs = 0;

export async function stackFixture(
  opts: {
    signed?: boolean;
    components?: (ports: StackPorts) => ComponentSpec[];
    /** More files for `artifacts/`, by name. */ artifacts?: Record<string, Uint8Array>;
  } = {},
): Promise<StackFixture> {
  const signed = opts.signed ?? false;
  const dir = mkdtempSync(join(tmpdir(), 'keystone-stack-'));
  const keyDir = mkdtempSync(join(tmpdir(), 'keystone-stack-key-'));
  const [influxdb, api, web] = (await freePorts(3)) as [number, number, number];
  const ports: StackPorts = { influxdb, api, web };
  const plan = 'plans/stack.toml';

  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  mkdirSync(join(dir, 'recipes'), { recursive: true });
  mkdirSync(join(dir, 'plans'), { recursive: true });
  const shas = new Map<string, string>();
  for (const f of readdirSync(join(PROJECT_ROOT, 'artifacts'))) {
    if (!f.endsWith('.mjs')) continue;
    copyFileSync(join(PROJECT_ROOT, 'artifacts', f), join(dir, 'artifacts', f));
    shas.set(
      f,
      createHash('sha256')
        .update(readFileSync(join(dir, 'artifacts', f)))
        .digest('hex'),
    );
  }
  for (const [f, bytes] of Object.entries(opts.artifacts ?? {})) {
    writeFileSync(join(dir, 'artifacts', f), bytes);
    shas.set(f, createHash('sha256').update(bytes).digest('hex'));
  }
  const artifactSha = (f: string) => {
    const s = shas.get(f);
    if (!s) throw new Error(`no stand-in artifacts/${f}`);
    return s;
  };

  const keyPrefix = join(keyDir, 'stack');
  const ctl = async (args: string[]) => {
    const now = () => (lastSignedMs = Math.max(Date.now(), lastSignedMs + 1000));
    const r = await runCtl(args, dir, { now });
    if (r.code !== 0) throw new Error(`keystonectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  };
  if (signed) await ctl(['keygen', '--out', keyPrefix, '--no-password']);

  const written = new Set<string>();
  const fx: StackFixture = {
    dir,
    plan,
    ports,
    signed,
    trustArgs: signed ? ['--trusted-key', `${keyPrefix}.pub`] : ['--allow-unsigned'],
    components: (opts.components ?? fourStack)(ports),
    spec(name) {
      const c = fx.components.find((x) => x.name === name);
      if (!c) throw new Error(`no component ${name} in the fixture`);
      return c;
    },
    add(...specs) {
      fx.components.push(...specs);
      fx.write();
    },
    remove(name) {
      fx.spec(name);
      fx.components = fx.components.filter((c) => c.name !== name);
      fx.write();
    },
    bumpVersion(name, version) {
      const c = fx.spec(name);
      c.version = version;
      const i = c.args.indexOf('--version-label');
      if (i >= 0) c.args[i + 1] = version;
      fx.write();
    },
    recipePath: (name) => `recipes/${name}.toml`,
    write() {
      const byName = new Map(fx.components.map((c) => [c.name, c]));
      const want = new Set(fx.components.map((c) => fx.recipePath(c.name)));
      for (const old of written) if (!want.has(old)) rmSync(join(dir, old), { force: true });
      written.clear();
      for (const c of fx.components) {
        const file = fx.recipePath(c.name);
        writeIfChanged(join(dir, file), renderRecipe(c, byName, artifactSha));
        written.add(file);
      }
      const planText = fx.components
        .map((c) => `[[components]]\nname = ${q(c.name)}\nrecipe = ${q(fx.recipePath(c.name))}\n`)
        .join('\n');
      writeIfChanged(join(dir, plan), planText);
    },
    edit(file, from, to) {
      const p = join(dir, file);
      const before = readFileSync(p, 'utf8');
      const after = before.replace(from, to);
      if (after === before) throw new Error(`edit of ${file} changed nothing`);
      writeFileSync(p, after);
    },
    async sign(args = []) {
      if (!signed) throw new Error('this fixture is unsigned');
      await ctl(['sign', '--key', `${keyPrefix}.key`, ...args]);
    },
    revisionId: () => directoryRevisionId(dir),
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
  fx.write();
  if (signed) await fx.sign();
  return fx;
}

/** Rewrites a file only when its content changes, so an unchanged recipe does not wake the watcher. */
function writeIfChanged(path: string, text: string): void {
  let before: string | undefined;
  try {
    before = readFileSync(path, 'utf8');
  } catch {
    /* new file */
  }
  if (before === text) return;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
