// Composite services end to end (SPEC §12): a desired-state repository written as raw TOML (services, members,
// [config], [exports], binds, replicas are beyond what stack-fixture renders) in a temp directory, with the example's
// stand-in programs copied in and pinned by digest; and the real agent (`keystone agent --dir`) with its HTTP API on
// a free loopback port, driven by requests and waited on through its log and the API, always with a deadline.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { directoryRevisionId } from '../../src/source/directory-source.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from './agent-harness.js';
import { PROJECT_ROOT } from './example-repo.js';
import { freePorts } from './stack-fixture.js';

/** A TOML basic string (JSON's escapes are TOML's for the text used here). */
export const q = (s: string): string => JSON.stringify(s);

/** Polls `pred` every 50 ms until it holds; throws at the deadline, naming what it waited for. */
export async function until<T>(
  pred: () => T | undefined | false | Promise<T | undefined | false>,
  deadlineMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await pred();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline)
      throw new Error(
        `timed out after ${deadlineMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json<T = Record<string, unknown>>(): T;
}

/** One GET on loopback, with a short timeout; rejects when nothing answers. */
export async function httpGet(port: number, path = '/'): Promise<HttpAnswer> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(3000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: <T>() => JSON.parse(text) as T };
}

export interface CompositeRepo {
  /** The repository root (`--dir`). */
  dir: string;
  /** Repository-relative (`--plan`). */
  plan: string;
  trustArgs: string[];
  /** sha256 of a stand-in of `artifacts/`. */
  sha(artifact: string): string;
  /** Writes repository files (relative path → text); unchanged files are not touched, so the watcher sees one change. */
  write(files: Record<string, string>): void;
  read(file: string): string;
  /** The revision id the directory source gives the repository's current content. */
  revisionId(): Promise<string>;
  cleanup(): void;
}

export function compositeRepo(files: Record<string, string> = {}): CompositeRepo {
  const dir = mkdtempSync(join(tmpdir(), 'keystone-composite-'));
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
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
  const repo: CompositeRepo = {
    dir,
    plan: 'plans/device.toml',
    trustArgs: ['--allow-unsigned'],
    sha(artifact) {
      const s = shas.get(artifact);
      if (!s) throw new Error(`no stand-in artifacts/${artifact}`);
      return s;
    },
    write(more) {
      for (const [file, text] of Object.entries(more)) {
        const p = join(dir, file);
        if (existsSync(p) && readFileSync(p, 'utf8') === text) continue;
        mkdirSync(dirname(p), { recursive: true });
        writeFileSync(p, text);
      }
    },
    read: (file) => readFileSync(join(dir, file), 'utf8'),
    revisionId: () => directoryRevisionId(dir),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
  repo.write(files);
  return repo;
}

export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

/** The real agent on a composite repository, with its API on a free loopback port. */
export class CompositeAgent {
  readonly h = new AgentHarness();
  agent!: AgentProcess;
  apiPort = 0;
  token = '';

  constructor(readonly repo: CompositeRepo) {}

  /** Starts the agent and waits for the end of its first apply (returned). */
  async start(deadlineMs = 30_000): Promise<LogLine> {
    [this.apiPort] = (await freePorts(1)) as [number];
    this.agent = this.h.start({
      dir: this.repo.dir,
      plan: this.repo.plan,
      trustArgs: this.repo.trustArgs,
      args: ['--listen', `127.0.0.1:${this.apiPort}`],
    });
    const { end } = await this.applied(0, deadlineMs);
    const tokenFile = join(this.h.stateDir, 'api-token');
    this.token = await until(
      () => existsSync(tokenFile) && readFileSync(tokenFile, 'utf8').trim(),
      5_000,
      'the API token file',
    );
    await until(() => this.get('/healthz').then((r) => r.status === 200), 5_000, 'the API to answer');
    return end;
  }

  /**
   * Waits for the reconcile of the repository's current content (logged after index `after`) and for the end of
   * that apply. An intermediate revision (the watcher saw half of a write) is waited through.
   */
  async applied(after: number, deadlineMs = 30_000): Promise<{ plan: LogLine; end: LogLine; revision: string }> {
    const revision = await this.repo.revisionId();
    const plan = await this.agent.waitForLog(
      is.revision(revision, 'reconcile plan'),
      deadlineMs,
      after,
      `the reconcile of revision ${revision}`,
    );
    const end = await this.agent.waitForLog(
      is.applyEnd,
      deadlineMs,
      this.agent.logs.indexOf(plan) + 1,
      `the end of the apply of ${revision}`,
    );
    return { plan, end, revision };
  }

  /** Writes files and waits for their apply. */
  async push(
    files: Record<string, string>,
    deadlineMs = 30_000,
  ): Promise<{ plan: LogLine; end: LogLine; revision: string; mark: number }> {
    const mark = this.agent.mark();
    this.repo.write(files);
    return { ...(await this.applied(mark, deadlineMs)), mark };
  }

  async request<T = Record<string, unknown>>(method: 'GET' | 'POST', path: string): Promise<ApiAnswer<T>> {
    const res = await fetch(`http://127.0.0.1:${this.apiPort}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}` },
      signal: AbortSignal.timeout(90_000),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  }

  get<T = Record<string, unknown>>(path: string): Promise<ApiAnswer<T>> {
    return this.request<T>('GET', path);
  }

  post<T = Record<string, unknown>>(path: string): Promise<ApiAnswer<T>> {
    return this.request<T>('POST', path);
  }

  /** A unit's log lines from index `after` on. */
  lines(component: string, after: number, state?: string): LogLine[] {
    return this.agent.lines((l) => l.component === component && (state === undefined || l.state === state), after);
  }

  async cleanup(): Promise<void> {
    await this.h.cleanup();
  }
}
