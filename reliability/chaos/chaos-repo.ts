// The chaos run's desired-state repository: the example's four-component stack (stack-fixture), a standalone
// component `gauge` (a plain process that a "sick" commit gives a health check nothing can pass: the apply fails and,
// unlike the composite, nothing rolls it back, so the device keeps running a revision that failed, with an unhealthy
// instance that the next agent adopts), a busybox container `box` (when an engine is there) and a composite `app`
// (members api and side, side bound to api's exported port), signed with a key of its own, committed in a work tree
// and pushed over smart HTTP to a real `git http-backend`, so every push is what an operator's would be. It keeps a
// ledger of what it pushed and what each commit must end as: the invariants compare the device with it.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GIT_ENV } from '../../test/support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../../test/support/git-http-server.js';
import {
  asContainer,
  fourStack,
  freePorts,
  stackFixture,
  type ComponentSpec,
  type StackFixture,
} from '../../test/support/stack-fixture.js';

const run = promisify(execFile);

/** What the repository asks for; a push is a new Model, a revert the one before. */
export interface Model {
  /** Component (stack and box) → version. */
  versions: Record<string, string>;
  /** The composite's api member: its version and its configured port. */
  appVersion: string;
  appPort: number;
  /** side's check targets a closed port: the composite update fails and is rolled back. */
  appBroken: boolean;
  /**
   * gauge's check targets a closed port: its apply fails, nothing is rolled back, and gauge runs on unhealthy (the
   * revision the device runs is one that failed: what an agent restart must not turn into a success, issue 27).
   */
  sick: boolean;
}

/** The standalone component that a sick commit breaks; `sleep 200000` (the argument marks its process). */
export const GAUGE = 'gauge';
export const GAUGE_MARKER = '200000';
/** gauge's update lock, in its work directory. */
export const GAUGE_LOCK = 'run/update.lock';

/**
 * gauge: healthy, a plain sleep without a check (healthy once it stayed up a moment: the adopted-instance check settles
 * it in ~200 ms); sick, a check nothing can pass within a 2 s start budget (200 ms × 10), so an agent that restarts on
 * a sick revision spends 2 s in the health wait of the adopted instance (where the chaos aims some of its kills).
 */
function gauge(version: string, sick: boolean, closedPort: number): ComponentSpec {
  return {
    name: GAUGE,
    version,
    command: 'sleep',
    args: [GAUGE_MARKER],
    // SPEC §19: the chaos run holds it (run-chaos.ts, the `locked-bump` action) across kills of the agent.
    updateLock: { lock: GAUGE_LOCK },
    ...(sick && {
      health: { check: `tcp://127.0.0.1:${closedPort}`, interval: '200ms', timeout: '150ms', failureThreshold: 10 },
    }),
  };
}

/** What the device must end as for a commit: applied and healthy, applied but failed (its composite rolled back, or gauge unhealthy), refused. */
export type Expected = 'success' | 'failure' | 'error';

export interface PushedCommit {
  id: string;
  kind: string;
  expected: Expected;
  /** The content it carries (undefined for a replayed old tree: refused, it never runs). */
  model?: Model;
}

/** The composite's member recipes and the plan entry, as raw TOML (stack-fixture renders single components only). */
function compositeFiles(m: Model, sha: string, closedPort: number): Record<string, string> {
  const q = (s: string) => JSON.stringify(s);
  const fast = ['interval = "200ms"', 'timeout = "1s"', 'failure_threshold = 50'];
  const api = [
    '[metadata]',
    'name = "com.chaos.app-api"',
    `version = ${q(m.appVersion)}`,
    '[[artifacts]]',
    'uri = "../artifacts/fake-reports.mjs"',
    `sha256 = ${q(sha)}`,
    'unpack = false',
    '[config]',
    'port = 1',
    '[exports]',
    'port = "{{config.port}}"',
    '[lifecycle.run]',
    '[lifecycle.run.exec]',
    'command = "node"',
    `args = ["fake-reports.mjs", "--port", "{{config.port}}", "--version-label", ${q(m.appVersion)}]`,
    '[lifecycle.run.health]',
    'check = "http://127.0.0.1:{{config.port}}/health"',
    ...fast,
    '',
  ];
  // Broken: a check nothing can pass (a closed port), with a 1 s budget, so the rollback comes quickly.
  const side = [
    '[metadata]',
    'name = "com.chaos.app-side"',
    'version = "1.0.0"',
    '[lifecycle.run]',
    '[lifecycle.run.exec]',
    'command = "sleep"',
    'args = ["100000", "{{deps.api.exports.port}}"]',
    ...(m.appBroken
      ? [
          '[lifecycle.run.health]',
          `check = "tcp://127.0.0.1:${closedPort}"`,
          'interval = "200ms"',
          'timeout = "150ms"',
          'failure_threshold = 5',
        ]
      : []),
    '[[dependencies]]',
    'name = "com.chaos.app-api"',
    '',
  ];
  const app = [
    '[metadata]',
    'name = "com.chaos.app"',
    'version = "1.0.0"',
    '[[members]]',
    'name = "api"',
    'recipe = "recipes/app-api.toml"',
    '[[members]]',
    'name = "side"',
    'recipe = "recipes/app-side.toml"',
    '',
  ];
  return {
    'recipes/app-api.toml': api.join('\n'),
    'recipes/app-side.toml': side.join('\n'),
    'recipes/app.toml': app.join('\n'),
  };
}

/** The container component: busybox sh as PID 1 that leaves at once on SIGTERM (a plain sleep would wait out the grace). */
function box(image: string, version: string): ComponentSpec {
  return asContainer('box', version, {
    image,
    command: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1000 & wait $!; done'],
    resources: { memory_mb: 32, pids_limit: 16 },
  });
}

export class ChaosRepo {
  readonly pushed: PushedCommit[] = [];
  /** Every model pushed, in order: a revert goes back one. */
  private readonly history: Model[] = [];
  private counter = 0;

  private constructor(
    readonly fx: StackFixture,
    readonly server: GitHttpServer,
    readonly url: string,
    /** The bare repository the server serves (statuses are read back from its notes). */
    readonly bare: string,
    private readonly appPorts: readonly [number, number],
    private readonly closedPort: number,
    private model: Model,
  ) {}

  static async create(root: string, opts: { image?: string }): Promise<ChaosRepo> {
    const image = opts.image;
    const [p1, p2, closed] = (await freePorts(3)) as [number, number, number];
    const fx = await stackFixture({
      signed: true,
      components: (ports) => [
        ...fourStack(ports),
        gauge('1.0.0', false, closed),
        ...(image ? [box(image, '1.0.0')] : []),
      ],
    });
    const server = await startGitHttpServer({ root: join(root, 'srv') });
    const bare = server.createRepository('fleet');
    const versions = Object.fromEntries(fx.components.map((c) => [c.name, c.version]));
    const repo = new ChaosRepo(fx, server, server.url('fleet'), bare, [p1, p2], closed, {
      versions,
      appVersion: '0.9.0',
      appPort: p1,
      appBroken: false,
      sick: false,
    });
    await repo.git('init', '--quiet', '--initial-branch=main');
    await repo.commitAndPush('initial', repo.model);
    return repo;
  }

  /** Component names the device must run (plan names; the composite's members as `app/<member>`). */
  componentNames(): string[] {
    return [...this.fx.components.map((c) => c.name), 'app/api', 'app/side'].sort();
  }

  /** The newest commit the device must run: the tip, unless the tip was refused (then the one before, and so on). */
  newestAccepted(): PushedCommit {
    return this.pushed.findLast((c) => c.expected !== 'error')!;
  }

  tip(): PushedCommit {
    return this.pushed.at(-1)!;
  }

  /** A version bump of one component (a stack member, the container, or the composite's api member). */
  async pushBump(name: string): Promise<PushedCommit> {
    const n = ++this.counter;
    const next = structuredClone(this.model);
    // A bump after a broken composite (or a sick gauge) also repairs it: an operator's next commit is the fix.
    next.appBroken = false;
    next.sick = false;
    if (name === 'app') next.appVersion = `0.9.${n}`;
    else next.versions[name] = `${next.versions[name]!.split('.').slice(0, 2).join('.')}.${100 + n}`;
    return this.commitAndPush(`bump ${name}`, next);
  }

  /** `git revert` of the last push, signed again (a newer signature over older content). */
  async pushRevert(): Promise<PushedCommit> {
    const before = this.history.at(-2) ?? this.model;
    return this.commitAndPush('revert', { ...structuredClone(before), appBroken: false, sick: false });
  }

  /**
   * A new version of gauge whose health check nothing can pass: the apply fails (gauge `unhealthy`), nothing is rolled
   * back, and the device runs on a revision that failed until the next commit (which repairs it).
   */
  async pushSick(): Promise<PushedCommit> {
    const next = structuredClone(this.model);
    next.sick = true;
    next.versions[GAUGE] = `1.0.${100 + ++this.counter}`;
    return this.commitAndPush('make gauge sick', next);
  }

  /** A composite member change that cannot become healthy: api moves to the other port, side gets a check it fails. */
  async pushCompositeBreak(): Promise<PushedCommit> {
    const next = structuredClone(this.model);
    next.appBroken = true;
    next.appPort = next.appPort === this.appPorts[0] ? this.appPorts[1] : this.appPorts[0];
    return this.commitAndPush('break the composite', next);
  }

  /**
   * A replay: the first commit's tree, signed long ago, pushed again as a new commit. Its signature is valid but older
   * than the device's replay floor: refused (`error`), and the device keeps what it runs.
   */
  async pushReplay(): Promise<PushedCommit> {
    // The floor is the first commit's own signing time until another is accepted: only then is its signature older.
    if (this.pushed.filter((c) => c.expected !== 'error').length < 2) return this.pushBump('telemetry');
    const oldTree = await this.git('rev-parse', `${this.pushed[0]!.id}^{tree}`);
    const id = await this.git('commit-tree', oldTree, '-p', 'HEAD', '-m', 'replay of an old signed tree');
    await this.push(`${id}:refs/heads/main`);
    // The next commit goes on top (linear history, as a real branch); the work tree keeps the current model.
    await this.git('reset', '--quiet', '--soft', id);
    const c: PushedCommit = { id, kind: 'replay', expected: 'error' };
    this.pushed.push(c);
    return c;
  }

  private async commitAndPush(kind: string, next: Model): Promise<PushedCommit> {
    const fx = this.fx;
    for (const c of fx.components) {
      c.version = next.versions[c.name]!;
      const i = c.args.indexOf('--version-label');
      if (i >= 0) c.args[i + 1] = c.version;
    }
    const g = gauge(next.versions[GAUGE]!, next.sick, this.closedPort);
    fx.components = fx.components.map((c) => (c.name === GAUGE ? g : c));
    fx.write();
    for (const [file, text] of Object.entries(compositeFiles(next, this.sha('fake-reports.mjs'), this.closedPort)))
      writeFileSync(join(fx.dir, file), text);
    const planPath = join(fx.dir, fx.plan);
    writeFileSync(
      planPath,
      `${readFileSync(planPath, 'utf8')}\n[[components]]\nname = "app"\nrecipe = "recipes/app.toml"\n[components.config.api]\nport = ${next.appPort}\n`,
    );
    await fx.sign();
    await this.git('add', '-A');
    await this.git('commit', '--quiet', '--allow-empty', '-m', kind);
    await this.push('HEAD:refs/heads/main');
    const id = await this.git('rev-parse', 'HEAD');
    this.model = next;
    this.history.push(next);
    const c: PushedCommit = { id, kind, expected: next.appBroken || next.sick ? 'failure' : 'success', model: next };
    this.pushed.push(c);
    return c;
  }

  /** The digest of a stand-in in the repository's artifacts/ (stack-fixture copied them all). */
  private sha(artifact: string): string {
    return createHash('sha256')
      .update(readFileSync(join(this.fx.dir, 'artifacts', artifact)))
      .digest('hex');
  }

  /** Async on purpose: the Git server answers from this very process. */
  async git(...args: string[]): Promise<string> {
    return (await run('git', args, { cwd: this.fx.dir, env: GIT_ENV, timeout: 120_000 })).stdout.trim();
  }

  /** Pushes that stalled and were made again (see push()). */
  stalledPushes = 0;

  /**
   * `git push` of `refspec` to the server. Seen once in a long run on a loaded machine: a push whose request the dev
   * server (src/dev/git-http-server.ts) never answered, with no backend running, holding the run for good. curl gives
   * up on a transfer stalled for 20 s and the push is made again (it is idempotent); the stalls are counted.
   */
  private async push(refspec: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.git(
          '-c',
          'http.lowSpeedLimit=1',
          '-c',
          'http.lowSpeedTime=20',
          'push',
          '--quiet',
          this.url,
          refspec,
        );
        return;
      } catch (e) {
        if (attempt >= 3) throw e;
        this.stalledPushes++;
      }
    }
  }

  async close(): Promise<void> {
    await this.server.stop();
    this.fx.cleanup();
  }
}
