import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { probe } from '../../src/runtime/probe.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { GroupReaper, isRoot, liveGroup, processComponent, readOr, tempRoot } from './runtime-fixtures.js';

const reaper = new GroupReaper();
let tmp: Awaited<ReturnType<typeof tempRoot>>;
const servers: net.Server[] = [];
const sockets = new Set<net.Socket>();

beforeEach(async () => {
  tmp = await tempRoot();
});
afterEach(async () => {
  for (const sock of sockets) sock.destroy();
  sockets.clear();
  for (const s of servers.splice(0)) {
    if (s instanceof http.Server) s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await reaper.killAll();
  await tmp.cleanup();
});

async function listen<T extends net.Server>(server: T): Promise<number> {
  servers.push(server);
  server.on('connection', (sock: net.Socket) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

/** An HTTP server answering each path with the status in it: /200, /302, /500; /hang never answers. */
async function statusServer(): Promise<number> {
  return listen(
    http.createServer((req, res) => {
      if (req.url === '/hang') return;
      const status = Number(req.url?.slice(1));
      res.writeHead(status, status === 302 ? { location: '/500' } : {});
      // A body that never ends must not hold the probe: only the status line counts.
      res.write('streaming');
    }),
  );
}

describe('http probes', () => {
  it('2xx and 3xx are healthy (redirects not followed), 5xx is not', async () => {
    const port = await statusServer();
    const ok = await probe(`http://127.0.0.1:${port}/200`, { timeoutMs: 2000 });
    expect(ok).toMatchObject({ ok: true, detail: 'HTTP 200' });
    expect(ok.latencyMs).toBeGreaterThanOrEqual(0);
    expect(await probe(`http://127.0.0.1:${port}/302`, { timeoutMs: 2000 })).toMatchObject({
      ok: true,
      detail: 'HTTP 302',
    });
    expect(await probe(`http://127.0.0.1:${port}/500`, { timeoutMs: 2000 })).toMatchObject({
      ok: false,
      detail: 'HTTP 500',
    });
  });

  it('a server that never answers times out within the timeout', async () => {
    const port = await statusServer();
    const r = await probe(`http://127.0.0.1:${port}/hang`, { timeoutMs: 300 });
    expect(r.ok).toBe(false);
    expect(r.detail).toContain('timed out after 300 ms');
    expect(r.latencyMs).toBeGreaterThanOrEqual(290);
    expect(r.latencyMs).toBeLessThan(1000);
  });

  it('a TCP peer that accepts and never speaks HTTP times out too', async () => {
    const port = await listen(net.createServer(() => {}));
    const r = await probe(`http://127.0.0.1:${port}/`, { timeoutMs: 250 });
    expect(r).toMatchObject({ ok: false });
    expect(r.latencyMs).toBeLessThan(1000);
  });

  it('a refused connection is a failure with the reason', async () => {
    const port = await freePort();
    const r = await probe(`http://127.0.0.1:${port}/`, { timeoutMs: 1000 });
    expect(r.ok).toBe(false);
    expect(r.detail).toContain('ECONNREFUSED');
  });
});

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('tcp probes', () => {
  it('open is healthy, closed is not', async () => {
    const port = await listen(net.createServer((sock) => sock.end()));
    expect(await probe(`tcp://127.0.0.1:${port}`, { timeoutMs: 1000 })).toMatchObject({ ok: true });
    const closed = await probe(`tcp://127.0.0.1:${await freePort()}`, { timeoutMs: 1000 });
    expect(closed.ok).toBe(false);
    expect(closed.detail).toContain('ECONNREFUSED');
  });

  it('a malformed check fails without throwing', async () => {
    expect(await probe('tcp://127.0.0.1', { timeoutMs: 100 })).toMatchObject({ ok: false });
    expect(await probe('ftp://x', { timeoutMs: 100 })).toMatchObject({ ok: false });
    expect(await probe('not a url', { timeoutMs: 100 })).toMatchObject({ ok: false });
  });
});

describe('cmd probes', () => {
  it('exit 0 is healthy, exit 1 is not (with the last line of output), in the given directory', async () => {
    expect(await probe('cmd:test "$(pwd)" = ' + tmp.root, { timeoutMs: 2000, cwd: tmp.root })).toMatchObject({
      ok: true,
      detail: 'exit 0',
    });
    expect(await probe('cmd:echo not ready >&2; exit 1', { timeoutMs: 2000, cwd: tmp.root })).toMatchObject({
      ok: false,
      detail: 'exit 1: not ready',
    });
  });

  it('is killed at the timeout, with everything it started', async () => {
    const t0 = Date.now();
    const r = await probe('cmd:echo $$ > probe.pid; sleep 1000 & sleep 1000', { timeoutMs: 300, cwd: tmp.root });
    expect(r).toMatchObject({ ok: false, detail: 'timed out after 300 ms' });
    expect(Date.now() - t0).toBeLessThan(2000);
    const pid = Number(await readOr(join(tmp.root, 'probe.pid')));
    reaper.add(pid);
    expect(liveGroup(pid)).toEqual([]);
  });

  it('a component probe runs as the run user in the work directory', async () => {
    const rt = new ProcessRuntime({ installArtifacts: async () => {} });
    const uid = isRoot ? 65534 : process.getuid!();
    const c = processComponent(
      'probed',
      { command: 'true' },
      {
        ...(isRoot && { security: { user: 'nobody' } }),
        health: { check: `cmd:test "$(id -u)" = ${uid} && test -f marker` },
      },
    );
    const paths = tmp.paths('probed');
    await rt.install(c, paths, new AbortController().signal);
    const p = (await rt.healthProbe(c, paths))!;
    expect(await p(new AbortController().signal)).toMatchObject({ ok: false });
    await writeFile(join(paths.workDir, 'marker'), '');
    expect(await p(new AbortController().signal)).toMatchObject({ ok: true });
    expect(await rt.healthProbe(processComponent('unprobed', { command: 'true' }), paths)).toBeUndefined();
  });
});
