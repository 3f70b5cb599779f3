// One health probe of SPEC §2 (http(s)://, tcp://host:port, cmd:<command line>), each with a timeout that really aborts.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { runInGroup } from './run-in-group.js';

/** What one probe found. */
export interface ProbeResult {
  ok: boolean;
  /** For people: `HTTP 200`, `connect ECONNREFUSED 127.0.0.1:80`, `exit 1: …`, `timed out after 3000 ms`. */
  detail: string;
  latencyMs: number;
}

export interface ProbeOptions {
  timeoutMs: number;
  /** cmd: the work directory. */
  cwd?: string;
  /** cmd: the prefix that drops privileges, ending with '--' (`[setpriv, …options, '--']`); empty runs sh directly. */
  privilegesArgv?: readonly string[];
  /** cmd: the environment (the component's). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  now?: () => number;
}

/** Runs `check` once. Never throws: a malformed check is a failed probe with the reason in `detail`. */
export async function probe(check: string, opts: ProbeOptions): Promise<ProbeResult> {
  const now = opts.now ?? (() => performance.now());
  const started = now();
  const done = (ok: boolean, detail: string): ProbeResult => ({
    ok,
    detail,
    latencyMs: Math.max(0, Math.round(now() - started)),
  });
  try {
    if (check.startsWith('cmd:')) return await cmdProbe(check.slice(4), opts, done);
    const url = new URL(check);
    if (url.protocol === 'http:' || url.protocol === 'https:') return await httpProbe(url, opts, done);
    if (url.protocol === 'tcp:') return await tcpProbe(url, opts, done);
    return done(false, `unsupported health check scheme ${url.protocol}`);
  } catch (e) {
    return done(false, (e as Error).message);
  }
}

type Done = (ok: boolean, detail: string) => ProbeResult;

/** 2xx/3xx is healthy; redirects are not followed and the body is never read. */
function httpProbe(url: URL, opts: ProbeOptions, done: Done): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (ok: boolean, detail: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      req.destroy();
      resolve(done(ok, detail));
    };
    const options: https.RequestOptions = {
      method: 'GET',
      agent: false,
      headers: { 'user-agent': 'keystone-health', connection: 'close' },
    };
    if (url.protocol === 'https:') options.rejectUnauthorized = true;
    const req = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      finish(status >= 200 && status < 400, `HTTP ${status}`);
    });
    req.on('error', (e) => finish(false, e.message));
    const timer = setTimeout(() => finish(false, `timed out after ${opts.timeoutMs} ms`), opts.timeoutMs);
    const onAbort = () => finish(false, 'aborted');
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
    req.end();
  });
}

/** Healthy when a TCP connection is accepted; it is closed at once. */
function tcpProbe(url: URL, opts: ProbeOptions, done: Done): Promise<ProbeResult> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port);
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535)
    return Promise.resolve(done(false, `tcp check needs host:port, got ${url.host}`));
  return new Promise((resolve) => {
    let settled = false;
    const finish = (ok: boolean, detail: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(done(ok, detail));
    };
    const socket = net.connect({ host, port });
    socket.once('connect', () => finish(true, `connected to ${url.host}`));
    socket.once('error', (e) => finish(false, e.message));
    const timer = setTimeout(() => finish(false, `timed out after ${opts.timeoutMs} ms`), opts.timeoutMs);
    const onAbort = () => finish(false, 'aborted');
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `sh -c` in the work directory as the run user; exit 0 is healthy; the whole group is killed at the timeout. */
async function cmdProbe(commandLine: string, opts: ProbeOptions, done: Done): Promise<ProbeResult> {
  const r = await runInGroup([...(opts.privilegesArgv ?? []), '/bin/sh', '-c', commandLine], {
    cwd: opts.cwd ?? process.cwd(),
    env: opts.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdout: 'pipe',
    stderr: 'pipe',
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    captureBytes: 1024,
  });
  if (r.spawnError) return done(false, r.spawnError.message);
  if (r.timedOut) return done(false, `timed out after ${opts.timeoutMs} ms`);
  if (r.aborted) return done(false, 'aborted');
  const last = lastLine(r.stderr) || lastLine(r.stdout);
  const how = r.code !== null ? `exit ${r.code}` : `killed by ${r.signal}`;
  return done(r.code === 0, last ? `${how}: ${last}` : how);
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').trim().slice(0, 200);
}
