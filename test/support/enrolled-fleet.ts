// A fleet of enrolled devices (SPEC §15) for end-to-end tests: real agents over a real Git smart-HTTP server
// (`git http-backend`), each with the key pair it made in its state directory, enrolled with `keystonectl enroll`
// (the certificates committed under devices/ of the signed repository) and run with `--enrollment-key`.
//
// The devices follow the fleet repository with a read-only token and push their reports to a repository of their own
// with the one push token they all share (`--status-repo`, `--status-token-file`, docs/security.md): whoever holds a
// device holds that token, so the attacker of the tests pushes with it, over the same server, as any device could
// (plain `git push` of rollout refs, and notes written by Keystone's own notes reporter under another device's name).
//
// Read by the tests the ways an operator reads them: the device's log lines (gate open, held), its API
// (`GET /v1/revision`: the commits held at the gate, why, and when the gate was last read), its store (what it runs),
// the reports on the server, and `keystonectl fleet status --enrollment-key … --json` over the same server.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { reportSigner, type ReportSigner } from '../../src/identity/report-signature.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { parseRolloutRef, type RolloutRef } from '../../src/report/rollout-refs.js';
import { readStatusNotes, type NotedStatusLine } from '../../src/fleet-view/status-notes-read.js';
import { parseSecretKey } from '../../src/trust/minisign.js';
import { apiOf } from './agent-api.js';
import { AgentHarness, type AgentProcess, type LogLine } from './agent-harness.js';
import { runCtl } from './cli-run.js';
import { until } from './composite-fixture.js';
import { PROJECT_ROOT } from './example-repo.js';
import { gitIn } from './git-env.js';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.js';
import { freePorts, stackFixture, type ComponentSpec, type StackFixture } from './stack-fixture.js';

const run = promisify(execFile);
const KEYSTONE_BIN = join(PROJECT_ROOT, 'bin', 'keystone.js');

export const READ_TOKEN = 'fleet-read-token-issue-29';
export const PUSH_TOKEN = 'reports-push-token-issue-29';
/** The agents' --poll, which is also how often a held commit's gate is read again (±10 %). */
export const POLL_MS = 1000;

/** What `keystone identity --json` prints. */
export interface DeviceIdentity {
  device: string;
  reportKey: string;
  reportKeyId: string;
  ageRecipient: string;
}

/** A commit held at a device's gate, as GET /v1/revision shows it. */
export interface HoldView {
  revision: string;
  wave: string;
  reason: string;
  checkedAt: string | null;
}

/** The parts of `keystonectl fleet status --json` the tests read. */
export interface FleetStatusJson {
  commit: string;
  devices: Array<{
    device: string;
    state: string;
    wave?: string | null;
    report?: string;
    reportReason?: string;
    claimed?: string;
    commit: string | null;
  }>;
  rollout?: {
    waves: Array<{ name: string; success: number; failed: number; state: string }>;
    halted?: { wave: string; failed: number; of: number };
    requireEnrolled?: boolean;
    notCounted?: Array<{ device: string; wave: string; state: string; verdict: string; reason?: string }>;
  };
}

/** `keystone identity --json` on a state directory: makes the device's keys when it has none, as its first start would. */
export async function keystoneIdentity(stateDir: string, device: string): Promise<DeviceIdentity> {
  const { stdout } = await run(
    process.execPath,
    [KEYSTONE_BIN, 'identity', '--json', '--state-dir', stateDir, '--device', device],
    { cwd: PROJECT_ROOT },
  );
  return JSON.parse(stdout) as DeviceIdentity;
}

/** The device's own report key, read from its state directory (what an attacker holding the device has). */
export async function signerOf(stateDir: string): Promise<ReportSigner> {
  return reportSigner(await parseSecretKey(readFileSync(join(stateDir, 'identity', 'report.key'), 'utf8')));
}

export class EnrolledFleet {
  readonly harness = new Map<string, AgentHarness>();
  readonly agents = new Map<string, AgentProcess>();
  readonly identities = new Map<string, DeviceIdentity>();
  private readonly apiPorts = new Map<string, number>();
  /** The state directories of devices installed again: cleaned up with the rest. */
  private readonly retired: AgentHarness[] = [];
  /** fleet.toml as the next push writes it. */
  fleetToml = '';

  private constructor(
    readonly root: string,
    readonly server: GitHttpServer,
    /** The bare repositories the server serves: the operator pushes straight into `fleetBare`, never the devices. */
    readonly fleetBare: string,
    readonly reportsBare: string,
    readonly fx: StackFixture,
  ) {}

  static async create(components: ComponentSpec[]): Promise<EnrolledFleet> {
    const root = mkdtempSync(join(tmpdir(), 'keystone-identity-'));
    const server = await startGitHttpServer({ root: join(root, 'srv'), token: PUSH_TOKEN, readToken: READ_TOKEN });
    const fleetBare = server.createRepository('fleet');
    const reportsBare = server.createRepository('reports');
    const fx = await stackFixture({ signed: true, components: () => components });
    const f = new EnrolledFleet(root, server, fleetBare, reportsBare, fx);
    writeFileSync(f.readTokenFile, `${READ_TOKEN}\n`, { mode: 0o600 });
    writeFileSync(f.pushTokenFile, `${PUSH_TOKEN}\n`, { mode: 0o600 });
    // The operator's enrolment key, outside the repository as on the operator's machine.
    mkdirSync(join(root, 'keys'), { mode: 0o700 });
    const keygen = await runCtl(['keygen', '--out', join(root, 'keys', 'enroll'), '--no-password'], root);
    if (keygen.code !== 0) throw new Error(`keygen: ${keygen.stderr}`);
    await gitIn(fx.dir, ['init', '--quiet', '--initial-branch=main']);
    return f;
  }

  get enrollPub(): string {
    return join(this.root, 'keys', 'enroll.pub');
  }
  get readTokenFile(): string {
    return join(this.root, 'read-token');
  }
  get pushTokenFile(): string {
    return join(this.root, 'push-token');
  }
  /** The reports repository's URL with the devices' push token in it: what an attacker holding a device pushes to. */
  get reportsPushUrl(): string {
    return this.server.url('reports').replace('http://', `http://x:${PUSH_TOKEN}@`);
  }

  /** A fresh state directory for `device` (its first install, or a reinstall), with its keys made, as `keystone identity` does. */
  async install(device: string): Promise<DeviceIdentity> {
    const old = this.harness.get(device);
    if (old) this.retired.push(old);
    const h = new AgentHarness();
    this.harness.set(device, h);
    if (!this.apiPorts.has(device)) this.apiPorts.set(device, (await freePorts(1))[0]!);
    const id = await keystoneIdentity(h.stateDir, device);
    this.identities.set(device, id);
    return id;
  }

  /** `keystonectl enroll` of the device's identity as `keystone identity --json` printed it: devices/<device>.cert. */
  async enrol(device: string, opts: { force?: boolean } = {}): Promise<void> {
    const file = join(this.root, `${device}.identity.json`);
    writeFileSync(file, JSON.stringify(this.identities.get(device)) + '\n');
    const r = await runCtl(
      [
        'enroll',
        '--key',
        join(this.root, 'keys', 'enroll.key'),
        '--identity',
        file,
        ...(opts.force ? ['--force'] : []),
      ],
      this.fx.dir,
    );
    if (r.code !== 0) throw new Error(`enroll ${device}: ${r.stderr}`);
  }

  /** Writes the fixture and fleet.toml (then `edit`), signs, commits and pushes to main; returns the commit. */
  async push(message: string, edit?: (dir: string) => void): Promise<string> {
    this.fx.write();
    writeFileSync(join(this.fx.dir, 'fleet.toml'), this.fleetToml);
    edit?.(this.fx.dir);
    await this.fx.sign();
    await gitIn(this.fx.dir, ['add', '-A']);
    await gitIn(this.fx.dir, ['commit', '--quiet', '--allow-empty', '-m', message]);
    await gitIn(this.fx.dir, ['push', '--quiet', this.fleetBare, 'HEAD:refs/heads/main']);
    return gitIn(this.fx.dir, ['rev-parse', 'HEAD']);
  }

  /** Starts the device's agent on its current state directory. */
  start(device: string): AgentProcess {
    const h = this.harness.get(device)!;
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
        '--status',
        'git-notes',
        '--git-token-file',
        this.readTokenFile,
        '--status-repo',
        this.server.url('reports'),
        '--status-token-file',
        this.pushTokenFile,
        '--enrollment-key',
        this.enrollPub,
        '--listen',
        `127.0.0.1:${this.apiPorts.get(device)!}`,
      ],
    });
    this.agents.set(device, agent);
    return agent;
  }

  agent(device: string): AgentProcess {
    return this.agents.get(device)!;
  }

  applied(device: string): string | undefined {
    return this.harness.get(device)!.appliedRevision()?.id;
  }

  async waitApplied(device: string, commit: string, deadlineMs = 60_000): Promise<void> {
    await until(
      () => this.applied(device) === commit || undefined,
      deadlineMs,
      `${device} to run ${commit.slice(0, 8)}`,
    );
  }

  gateOpen(device: string, commit: string): LogLine | undefined {
    return this.agent(device).lines((l) => l.msg === 'rollout gate open' && l.revision === commit)[0];
  }

  waitGateOpen(device: string, commit: string, deadlineMs = 60_000): Promise<LogLine> {
    return until(() => this.gateOpen(device, commit), deadlineMs, `${device}'s gate to open for ${commit.slice(0, 8)}`);
  }

  /** The device's `held: …` (and halted) lines about `commit`, in order. */
  heldLines(device: string, commit: string): LogLine[] {
    return this.agent(device).lines(
      (l) =>
        l.revision === commit &&
        typeof l.msg === 'string' &&
        (l.msg.startsWith('held: ') || l.msg.startsWith('halted ')),
    );
  }

  /** Waits for a held line of `commit` saying `text`; fails at once when the device opens its gate for the commit or halts it instead. */
  async waitHeld(device: string, commit: string, text: string, deadlineMs = 30_000): Promise<LogLine> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const held = this.heldLines(device, commit).find((l) => String(l.msg).includes(text));
      if (held) return held;
      const opened = this.gateOpen(device, commit);
      if (opened)
        throw new Error(
          `${device} opened its gate for ${commit.slice(0, 8)} (${String(opened.reason)}) instead of saying "${text}"`,
        );
      const halted = this.heldLines(device, commit).find((l) => String(l.msg).startsWith('halted'));
      if (halted)
        throw new Error(`${device} halted ${commit.slice(0, 8)} (${String(halted.msg)}) instead of saying "${text}"`);
      if (Date.now() > deadline)
        throw new Error(
          `timed out after ${deadlineMs} ms waiting for ${device} to say "${text}" of ${commit.slice(0, 8)}\n${this.agent(device).tail()}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The commit's hold on the device's gate as its API shows it (GET /v1/revision), or undefined. */
  async hold(device: string, commit: string): Promise<HoldView | undefined> {
    const r = await apiOf(this.harness.get(device)!.stateDir, this.apiPorts.get(device)!).get('/v1/revision');
    if (r.status !== 200) throw new Error(`GET /v1/revision: ${r.status} ${JSON.stringify(r.body)}`);
    return (r.body as { rollout: HoldView[] }).rollout.find((h) => h.revision === commit);
  }

  /**
   * The device keeps `commit` held, and neither opens its gate for it nor halts it, over gate reads that began past
   * `since` + the bake + three rechecks: by then a report that counted (present on the server since `since`) would have
   * opened it (the first read that sees a success starts the bake, on the host's clock in whole seconds). Fails at
   * once when the gate opens or halts.
   */
  async staysHeld(device: string, commit: string, since: number, bakeMs: number): Promise<HoldView> {
    const past = since + bakeMs + 3 * POLL_MS + 500;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const opened = this.gateOpen(device, commit);
      if (opened) throw new Error(`${device} opened its gate for ${commit.slice(0, 8)}: ${String(opened.reason)}`);
      const halted = this.heldLines(device, commit).find((l) => String(l.msg).startsWith('halted'));
      if (halted) throw new Error(`${device} halted ${commit.slice(0, 8)}: ${String(halted.msg)}`);
      if (this.applied(device) === commit) throw new Error(`${device} applied ${commit.slice(0, 8)}`);
      const h = await this.hold(device, commit);
      if (h?.checkedAt && Date.parse(h.checkedAt) >= past) return h;
      if (Date.now() > deadline)
        throw new Error(
          `${device} did not read its gate for ${commit.slice(0, 8)} past ${new Date(past).toISOString()} (hold: ${JSON.stringify(h)})\n${this.agent(device).tail()}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async note(commit: string, device: string): Promise<NotedStatusLine | undefined> {
    return (await readStatusNotes(this.reportsBare, commit)).find((l) => l.context === `keystone/${device}`);
  }

  reported(commit: string, device: string, state: string, deadlineMs = 60_000): Promise<NotedStatusLine> {
    return until(
      async () => {
        const l = await this.note(commit, device);
        return l?.state === state ? l : undefined;
      },
      deadlineMs,
      `${device}'s ${state} note on ${commit.slice(0, 8)}`,
    );
  }

  /** Waits for the device's `state` note on `commit` signed by the key `keyId` (not a line someone else wrote in its name). */
  reportedBy(
    commit: string,
    device: string,
    state: string,
    keyId: string,
    deadlineMs = 60_000,
  ): Promise<NotedStatusLine> {
    return until(
      async () => {
        const l = await this.note(commit, device);
        return l?.state === state && l.signature?.keyId === keyId ? l : undefined;
      },
      deadlineMs,
      `${device}'s ${state} note on ${commit.slice(0, 8)} signed by ${keyId}`,
    );
  }

  /** Every rollout ref on the reports server: its name and what it says. */
  async rolloutRefs(): Promise<Array<{ name: string; ref: RolloutRef }>> {
    const out = await gitIn(this.reportsBare, ['for-each-ref', '--format=%(refname)', 'refs/keystone-rollout/']);
    return out
      .split('\n')
      .filter(Boolean)
      .flatMap((name) => {
        const ref = parseRolloutRef(name);
        return ref ? [{ name, ref }] : [];
      });
  }

  async refOf(device: string, commit: string, state: string): Promise<{ name: string; ref: RolloutRef } | undefined> {
    return (await this.rolloutRefs()).find(
      (r) =>
        r.ref.device === device && r.ref.commit === commit && r.ref.state === state && r.ref.signature !== undefined,
    );
  }

  waitRef(
    device: string,
    commit: string,
    state: string,
    deadlineMs = 60_000,
  ): Promise<{ name: string; ref: RolloutRef }> {
    return until(
      () => this.refOf(device, commit, state),
      deadlineMs,
      `${device}'s signed ${state} rollout ref on ${commit.slice(0, 8)}`,
    );
  }

  /** Pushes `refs` (each pointing at `commit`) to the reports repository with the devices' token, as any device could. */
  async attackerPushRefs(commit: string, refs: string[]): Promise<void> {
    await gitIn(this.fx.dir, ['push', '--quiet', this.reportsPushUrl, ...refs.map((r) => `${commit}:${r}`)], {
      GIT_TERMINAL_PROMPT: '0',
    });
  }

  /**
   * Writes a note for `device` on `commit` to that device's notes ref on the server, with Keystone's own notes reporter
   * and the devices' token: `signer` absent, unsigned (as earlier agents wrote); else signed with that key. With
   * `rollout`, its rollout ref goes in the same push (unsigned without a signer), as an agent's would.
   */
  async writeNote(
    device: string,
    commit: string,
    state: 'success' | 'failure' | 'pending' | 'error',
    opts: { signer?: ReportSigner; wave?: string; rollout?: boolean; description?: string } = {},
  ): Promise<void> {
    const wave = opts.wave ?? 'canary';
    const reporter = new GitNotesReporter({
      repository: this.server.url('reports'),
      cacheDir: mkdtempSync(join(this.root, 'writer-notes-')),
      token: PUSH_TOKEN,
      ...(opts.signer && { signer: opts.signer }),
    });
    await reporter.deliver({
      commit,
      state,
      description: opts.description ?? 'applied: 1 component running',
      context: `keystone/${device}`,
      at: Date.now(),
      fields: { target: 'all', wave },
      ...(opts.rollout && { rollout: { wave, state: state === 'pending' ? 'held' : state, keep: [] } }),
    });
  }

  /** `keystonectl fleet status --enrollment-key … --json` of `commit`, over the same server. */
  async fleetStatus(commit: string, opts: { enrollmentKey?: boolean } = {}): Promise<FleetStatusJson> {
    const r = await runCtl(
      [
        'fleet',
        'status',
        '--repo',
        this.server.url('fleet'),
        '--reports',
        this.server.url('reports'),
        '--token-file',
        this.pushTokenFile,
        '--cache-dir',
        join(this.root, 'fleet-cache'),
        '--commit',
        commit,
        ...(opts.enrollmentKey === false ? [] : ['--enrollment-key', this.enrollPub]),
        '--json',
      ],
      this.root,
    );
    if (r.code !== 0) throw new Error(`fleet status: exit ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as FleetStatusJson;
  }

  async cleanup(): Promise<void> {
    for (const h of [...this.harness.values(), ...this.retired]) await h.cleanup();
    await this.server.stop();
    this.fx.cleanup();
    rmSync(this.root, { recursive: true, force: true });
  }
}
