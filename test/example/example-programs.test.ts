// The example stack's stand-in programs (artifacts/fake-*.mjs), run for real with node on free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url));

interface Program {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

const running: Program[] = [];
const tempDirs: string[] = [];

afterEach(async () => {
  const all = running.splice(0);
  for (const p of all) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await Promise.all(all.map((p) => p.exited));
  for (const d of tempDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function workDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'keystone-example-'));
  tempDirs.push(d);
  return d;
}

/** Asks the OS for a port nobody listens on. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(0, '127.0.0.1', ok));
  const address = server.address();
  await new Promise<void>((ok) => server.close(() => ok()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

function start(program: string, args: string[], cwd: string): Program {
  const child = spawn(process.execPath, [join(ARTIFACTS, program), ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr?.resume();
  const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
  const p = { child, stdout: () => out, exited };
  running.push(p);
  return p;
}

/** Runs a program to completion: its exit code and stderr. */
function runToEnd(program: string, args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [join(ARTIFACTS, program), ...args], {
      cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.once('error', fail).once('close', (code) => ok({ code, stderr }));
  });
}

/** The HTTP status of GET url, or 0 when nothing answers. */
async function statusOf(url: string): Promise<number> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Polls until `probe` returns a value that `done` accepts, or fails at the deadline with the last value. */
async function until<T>(
  probe: () => Promise<T> | T,
  done: (v: T) => boolean,
  what: string,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function startDb(cwd: string, port: number, delayMs = 0): Promise<Program> {
  const db = start('fake-influxdb.mjs', ['--port', String(port), '--start-delay', String(delayMs)], cwd);
  await until(
    () => statusOf(`http://127.0.0.1:${port}/health`),
    (s) => s === 200,
    'the db to listen',
  );
  return db;
}

describe('fake-influxdb', () => {
  it('is not healthy during its start delay, healthy after it, and exits 0 on SIGTERM', async () => {
    const cwd = workDir();
    const port = await freePort();
    const delayMs = 800;
    const startedAt = Date.now();
    const db = start('fake-influxdb.mjs', ['--port', String(port), '--start-delay', String(delayMs)], cwd);
    await until(
      () => db.stdout(),
      (s) => s.includes('replaying'),
      'the db to start replaying',
    );
    expect(await statusOf(`http://127.0.0.1:${port}/health`)).toBe(0);

    await until(
      () => statusOf(`http://127.0.0.1:${port}/health`),
      (s) => s === 200,
      'the db to become healthy',
    );
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(delayMs);
    const body: unknown = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
    expect(body).toEqual({ status: 'pass' });

    db.child.kill('SIGTERM');
    expect(await db.exited).toBe(0);
  });

  it('keeps its record in data/ across restarts', async () => {
    const cwd = workDir();
    const port = await freePort();
    for (const boot of [1, 2]) {
      const db = await startDb(cwd, port);
      const record: unknown = JSON.parse(readFileSync(join(cwd, 'data', 'influxd.json'), 'utf8'));
      expect(record).toMatchObject({ boots: boot });
      db.child.kill('SIGTERM');
      expect(await db.exited).toBe(0);
    }
  });
});

describe('fake-api', () => {
  it('is 503 while the db is down and 200 while it is up', async () => {
    const cwd = workDir();
    const [dbPort, apiPort] = [await freePort(), await freePort()];
    const api = start(
      'fake-api.mjs',
      ['--port', String(apiPort), '--db', `http://127.0.0.1:${dbPort}`, '--version-label', '9.8.7'],
      cwd,
    );
    const health = `http://127.0.0.1:${apiPort}/health`;
    expect(
      await until(
        () => statusOf(health),
        (s) => s !== 0,
        'the api to listen',
      ),
    ).toBe(503);

    const db = await startDb(cwd, dbPort);
    await until(
      () => statusOf(health),
      (s) => s === 200,
      'the api to become healthy',
    );
    const hello: unknown = await (await fetch(`http://127.0.0.1:${apiPort}/v1/hello`)).json();
    expect(hello).toMatchObject({ version: '9.8.7', db: 'up' });

    db.child.kill('SIGTERM');
    expect(await db.exited).toBe(0);
    await until(
      () => statusOf(health),
      (s) => s === 503,
      'the api to notice the db is gone',
    );

    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });
});

describe('fake-telemetry', () => {
  it('--check fails before the first status write and passes after it, even with the db down', async () => {
    const cwd = workDir();
    const dbPort = await freePort();
    const before = await runToEnd('fake-telemetry.mjs', ['--check'], cwd);
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(/telemetry\.status/);

    const telemetry = start('fake-telemetry.mjs', ['--db', `http://127.0.0.1:${dbPort}`, '--interval', '200'], cwd);
    await until(
      () => existsSync(join(cwd, 'telemetry.status')),
      (v) => v,
      'the first status write',
    );
    expect((await runToEnd('fake-telemetry.mjs', ['--check'], cwd)).code).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'telemetry.status'), 'utf8'))).toMatchObject({ db: 'down' });

    telemetry.child.kill('SIGTERM');
    expect(await telemetry.exited).toBe(0);
  });

  it('--check fails on a status file older than 10 seconds', async () => {
    const cwd = workDir();
    const status = join(cwd, 'old.status');
    writeFileSync(status, JSON.stringify({ writtenAt: new Date(Date.now() - 60_000).toISOString() }));
    const result = await runToEnd('fake-telemetry.mjs', ['--check', '--status', status], cwd);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/not in the last 10s/);
  });
});

describe('fake-web', () => {
  it('serves a page and its health follows the api', async () => {
    const cwd = workDir();
    const [dbPort, apiPort, webPort] = [await freePort(), await freePort(), await freePort()];
    const web = start('fake-web.mjs', ['--port', String(webPort), '--api', `http://127.0.0.1:${apiPort}`], cwd);
    const health = `http://127.0.0.1:${webPort}/health`;
    expect(
      await until(
        () => statusOf(health),
        (s) => s !== 0,
        'the web to listen',
      ),
    ).toBe(503);

    await startDb(cwd, dbPort);
    const api = start('fake-api.mjs', ['--port', String(apiPort), '--db', `http://127.0.0.1:${dbPort}`], cwd);
    await until(
      () => statusOf(health),
      (s) => s === 200,
      'the web to become healthy',
    );
    const page = await (await fetch(`http://127.0.0.1:${webPort}/`)).text();
    expect(page).toContain('<html>');
    expect(page).toContain('1.4.0');

    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    await until(
      () => statusOf(health),
      (s) => s === 503,
      'the web to notice the api is gone',
    );

    web.child.kill('SIGTERM');
    expect(await web.exited).toBe(0);
  });
});
