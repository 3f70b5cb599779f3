// `keystone agent` serves the API (in-process, through the CLI's own main): --listen on loopback, --socket, the token
// file made at first start, POST /v1/sync re-reading the directory now, the refusal of a public address without
// --listen-public, and listeners closed when the agent stops.
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/keystone.js';
import { processesUnder } from '../support/agent-harness.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { until } from './api-stack.js';
import { rawRequest } from './http-request.js';

interface Running {
  stateDir: string;
  lines: Array<Record<string, unknown>>;
  stderr: () => string;
  stop(): Promise<number>;
  exit: Promise<number>;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fixture(): Promise<StackFixture> {
  const fx = await stackFixture({
    components: () => [sleeper('db'), sleeper('app', [{ component: 'db', type: 'hard' }])],
  });
  cleanups.push(() => fx.cleanup());
  return fx;
}

function runAgent(fx: StackFixture, args: string[]): Running {
  const stateDir = mkdtempSync(join(tmpdir(), 'keystone-api-cmd-'));
  const lines: Array<Record<string, unknown>> = [];
  let stderr = '';
  const signals = new EventEmitter();
  const io = {
    stdout: {
      write: (s: string) =>
        s
          .split('\n')
          .filter(Boolean)
          .forEach((l) => lines.push(JSON.parse(l) as Record<string, unknown>)),
    },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: fx.dir,
    env: {},
  };
  const argv = [
    'agent',
    '--dir',
    fx.dir,
    '--plan',
    fx.plan,
    '--allow-unsigned',
    '--state-dir',
    stateDir,
    '--log-format',
    'json',
    '--grace',
    '2s',
    '--stop-on-exit',
    ...args,
  ];
  const exit = main(argv, io, signals);
  let stopped = false;
  const r: Running = {
    stateDir,
    lines,
    stderr: () => stderr,
    exit,
    async stop() {
      if (!stopped) signals.emit('stop');
      stopped = true;
      return exit;
    },
  };
  cleanups.push(async () => {
    // A stop that hangs must not keep the components alive past the test: they are killed either way.
    await Promise.race([r.stop(), new Promise((resolve) => setTimeout(resolve, 10_000))]);
    for (const p of processesUnder(stateDir)) process.kill(p.pid, 'SIGKILL');
    rmSync(stateDir, { recursive: true, force: true });
  });
  return r;
}

const logged = (r: Running, msg: string) => r.lines.find((l) => l.msg === msg);
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => (c.destroy(), resolve(false)));
    c.once('error', () => resolve(true));
  });

describe('keystone agent serves the API', { timeout: 30_000 }, () => {
  it('on --listen and --socket, with the token file, a sync that re-reads now, and closes both on stop', async () => {
    const fx = await fixture();
    const [port] = (await freePorts(1)) as [number];
    const socketDir = mkdtempSync(join(tmpdir(), 'keystone-api-cmd-sock-'));
    cleanups.push(() => rmSync(socketDir, { recursive: true, force: true }));
    const socketPath = join(socketDir, 'keystone.sock');
    // A watcher that would take ten minutes to settle: only a sync can bring the next revision in time.
    const a = runAgent(fx, ['--listen', `127.0.0.1:${port}`, '--socket', socketPath, '--settle', '10m']);
    await until(() => logged(a, 'all components running') !== undefined, 'the first apply');

    const tokenFile = join(a.stateDir, 'api-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(logged(a, 'created the API token')).toMatchObject({ module: 'api', path: tokenFile });
    expect(logged(a, 'HTTP API listening')).toMatchObject({
      addresses: [`http://127.0.0.1:${port}`, `unix:${socketPath}`],
    });
    expect(JSON.stringify(a.lines)).not.toContain(token);
    expect(statSync(socketPath).mode & 0o777).toBe(0o600);

    const components = await rawRequest({
      port,
      path: '/v1/components',
      headers: { host: `localhost:${port}`, authorization: `Bearer ${token}` },
    });
    expect((components.json as Array<{ name: string; state: string }>).map((c) => [c.name, c.state])).toEqual([
      ['db', 'running'],
      ['app', 'running'],
    ]);

    fx.bumpVersion('app', '1.1.0');
    const sync = await rawRequest({
      port,
      method: 'POST',
      path: '/v1/sync',
      headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${token}` },
    });
    expect(sync.status).toBe(202);
    const next = await fx.revisionId();
    await until(() => a.lines.some((l) => l.msg === 'reconcile plan' && l.revision === next), 'the synced revision');
    await until(() => a.lines.filter((l) => l.msg === 'all components running').length === 2, 'the second apply');
    const rev = await rawRequest({ socketPath, path: '/v1/revision' });
    expect(rev.json).toMatchObject({ id: next, unsigned: true });
    // A second sync of the same content offers nothing.
    await rawRequest({ socketPath, method: 'POST', path: '/v1/sync' });
    await new Promise((r) => setTimeout(r, 200));
    expect(a.lines.filter((l) => l.msg === 'new revision')).toHaveLength(2);

    expect(await a.stop()).toBe(0);
    expect(await refused(port)).toBe(true);
    expect(existsSync(socketPath)).toBe(false);
  });

  it('refuses a non-loopback --listen without --listen-public (exit 2), before starting anything', async () => {
    const fx = await fixture();
    const a = runAgent(fx, ['--listen', '0.0.0.0:0']);
    expect(await a.exit).toBe(2);
    expect(a.stderr()).toContain('--listen-public');
    expect(existsSync(join(a.stateDir, 'api-token'))).toBe(false);
    const bad = runAgent(fx, ['--listen', 'localhost']);
    expect(await bad.exit).toBe(2);
  });

  it('--status-repo and --label are checked before anything starts: credentials in the URL, a --dir source, a bad label (exit 2)', async () => {
    const fx = await fixture();
    const stateDir = mkdtempSync(join(tmpdir(), 'keystone-api-cmd-'));
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const attempt = async (argv: string[]) => {
      let stderr = '';
      const io = {
        stdout: { write: () => undefined },
        stderr: { write: (t: string) => (stderr += t) },
        cwd: fx.dir,
        env: {},
      };
      return {
        code: await main(
          ['agent', ...argv, '--allow-unsigned', '--state-dir', stateDir, '--listen', 'none'],
          io,
          new EventEmitter(),
        ),
        stderr,
      };
    };
    const creds = await attempt(['--repo', fx.dir, '--status-repo', 'https://ops:s3cret@git.example/reports.git']);
    expect(creds.code).toBe(2);
    expect(creds.stderr).toContain(
      '--status-repo: the repository URL https://git.example/reports.git carries credentials',
    );
    expect(creds.stderr).not.toContain('s3cret');
    expect((await attempt(['--dir', fx.dir, '--status-repo', '/tmp/reports.git'])).stderr).toContain(
      '--status-repo is for a Git source (--repo), not --dir',
    );
    const label = await attempt(['--dir', fx.dir, '--label', 'hw=pi 4']);
    expect(label.code).toBe(2);
    expect(label.stderr).toContain('--label hw=pi 4: "pi 4" is not a label value');
    // Nothing started: no state store was created.
    expect(existsSync(join(stateDir, 'state.db'))).toBe(false);
  });

  it('with --listen-public warns, and still refuses foreign Host names', async () => {
    const fx = await fixture();
    const [port] = (await freePorts(1)) as [number];
    const a = runAgent(fx, ['--listen', `0.0.0.0:${port}`, '--listen-public']);
    await until(() => logged(a, 'HTTP API listening') !== undefined, 'the API to listen');
    expect(a.lines.find((l) => typeof l.msg === 'string' && l.msg.includes('--listen-public'))).toMatchObject({
      level: 40,
      module: 'api',
    });
    expect((await rawRequest({ port, path: '/healthz', headers: { host: `10.1.2.3:${port}` } })).status).toBe(200);
    expect((await rawRequest({ port, path: '/healthz', headers: { host: 'evil.example' } })).status).toBe(403);
    expect(await a.stop()).toBe(0);
  });

  it('--listen none turns the API off: no listener, no token file', async () => {
    const fx = await fixture();
    const a = runAgent(fx, ['--listen', 'none']);
    await until(() => logged(a, 'all components running') !== undefined, 'the first apply');
    expect(logged(a, 'the HTTP API is off (--listen none)')).toBeDefined();
    expect(existsSync(join(a.stateDir, 'api-token'))).toBe(false);
    expect(await a.stop()).toBe(0);
  });
});
