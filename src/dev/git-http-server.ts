// A real Git smart-HTTP server for tests and try-outs: Debian's `git http-backend` (CGI) behind a small loopback HTTP wrapper.
// It serves every bare repository under `root` at http://127.0.0.1:PORT/<name>.git, accepts pushes, can demand a
// token, can be stopped and started again on the same port (a server that goes away), and counts what it served.
// In a test it lives in the test's own process: run the git CLI against it asynchronously (execFile, never execFileSync, which
// would block the very event loop that has to answer it).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { LoopbackHttpServer } from './loopback-http-server.js';

const GIT_EXEC_PATH = execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim();

export interface GitHttpServerOptions {
  /** Directory holding the bare repositories (`<name>.git`). */
  root: string;
  /** When set, every request must carry `Authorization: Bearer <token>` or Basic auth with it as the password. */
  token?: string;
  /** A token that may fetch but not push (a deploy token with read access): receive-pack answers it 403. */
  readToken?: string;
  /** Milliseconds to hold every request before serving it (a slow server). */
  delayMs?: number;
  /** The port to listen on; default: one the OS picks. */
  port?: number;
}

export interface ServedRequest {
  method: string;
  path: string;
  query: string;
  status: number;
  /** Bytes sent in the response body. */
  bytes: number;
  /** Bytes received in the request body. */
  received: number;
  /** `git-protocol` header: `version=2` when the client asked for protocol v2. */
  protocol?: string;
}

/** An answer given instead of serving a request: a busy or failing server on cue. */
export interface CannedAnswer {
  status: number;
  headers?: Record<string, string>;
  /** Only a request this matches gets the answer (default: the next request); others are served meanwhile. */
  when?: (r: ServedRequest) => boolean;
}

export class GitHttpServer extends LoopbackHttpServer {
  readonly requests: ServedRequest[] = [];
  /**
   * Answers given, one per request and in order, instead of serving it: `429` with `Retry-After`, a `503`.
   * For tests: a real server answers so only under load, which cannot be produced on cue.
   */
  readonly cannedAnswers: CannedAnswer[] = [];
  delayMs: number;
  token: string | undefined;
  readToken: string | undefined;

  constructor(private readonly opts: GitHttpServerOptions) {
    super(opts.port ?? 0);
    this.delayMs = opts.delayMs ?? 0;
    this.token = opts.token;
    this.readToken = opts.readToken;
  }

  /** http://127.0.0.1:PORT/<name>.git */
  url(name: string): string {
    return `http://127.0.0.1:${this.port}/${name}.git`;
  }

  /** Creates an empty bare repository `<root>/<name>.git` that accepts pushes over HTTP; returns its path. */
  createRepository(name: string, branch = 'main'): string {
    const path = join(this.opts.root, `${name}.git`);
    mkdirSync(this.opts.root, { recursive: true });
    execFileSync('git', ['init', '--quiet', '--bare', `--initial-branch=${branch}`, path]);
    execFileSync('git', ['-C', path, 'config', 'http.receivepack', 'true']);
    execFileSync('git', ['-C', path, 'config', 'uploadpack.allowFilter', 'true']);
    return path;
  }

  /** What the request's credential may do: `write` (or no token required), `read` (readToken), or nothing. */
  private authorized(req: IncomingMessage): 'write' | 'read' | false {
    if (this.token === undefined && this.readToken === undefined) return 'write';
    const h = req.headers.authorization ?? '';
    const given = h.startsWith('Bearer ')
      ? h.slice(7)
      : h.startsWith('Basic ')
        ? Buffer.from(h.slice(6), 'base64').toString('utf8').split(':', 2)[1]
        : undefined;
    if (given === undefined) return false;
    if (this.token !== undefined && given === this.token) return 'write';
    if (this.readToken !== undefined && given === this.readToken) return 'read';
    return false;
  }

  protected async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record: ServedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.slice(1),
      status: 0,
      bytes: 0,
      received: 0,
    };
    if (typeof req.headers['git-protocol'] === 'string') record.protocol = req.headers['git-protocol'];
    this.requests.push(record);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    // The whole request body before any backend: `git http-backend` reads a push's body by its Content-Length and, at
    // an end of input before that, loops on read() for ever (git's pipe_fixed_length). A client that gave up during
    // the delay or mid-body, or a process that exited with a request in flight (a test's worker), left such a backend
    // spinning for hours; now a backend gets its body whole or is never started.
    const body = res.closed || req.destroyed ? undefined : await readBody(req);
    if (body === undefined || res.closed) {
      record.status = 499;
      return;
    }
    record.received = body.length;
    const i = this.cannedAnswers.findIndex((a) => !a.when || a.when(record));
    const canned = i < 0 ? undefined : this.cannedAnswers.splice(i, 1)[0];
    if (canned) {
      record.status = canned.status;
      res
        .writeHead(canned.status, { 'content-type': 'text/plain', ...canned.headers })
        .end(`HTTP ${canned.status} (canned)\n`);
      return;
    }
    const may = this.authorized(req);
    if (!may) {
      record.status = 401;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('authentication required\n');
      return;
    }
    if (
      may === 'read' &&
      (url.pathname.endsWith('/git-receive-pack') || url.searchParams.get('service') === 'git-receive-pack')
    ) {
      record.status = 403;
      res.writeHead(403, { 'content-type': 'text/plain' }).end('this token may read, not push\n');
      return;
    }
    const child = spawn(join(GIT_EXEC_PATH, 'git-http-backend'), [], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: this.opts.root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: record.method,
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: record.query,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(record.method === 'POST' && { CONTENT_LENGTH: String(body.length) }),
        ...(req.headers['content-encoding'] !== undefined && {
          HTTP_CONTENT_ENCODING: req.headers['content-encoding'],
        }),
        ...(record.protocol !== undefined && { GIT_PROTOCOL: record.protocol }),
        REMOTE_USER: 'keystone-test',
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    live.add(child);
    child.on('exit', () => live.delete(child));
    child.stdin.on('error', () => undefined);
    child.stdin.end(body);
    child.stderr.resume();
    // CGI: headers, a blank line, then the body.
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        record.bytes += chunk.length;
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      let sep = head.indexOf('\r\n\r\n');
      let sepLen = 4;
      if (sep < 0) {
        sep = head.indexOf('\n\n');
        sepLen = 2;
      }
      if (sep < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, sep).toString('latin1').split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      record.status = status;
      res.writeHead(status, headers);
      const body = head.subarray(sep + sepLen);
      record.bytes += body.length;
      if (body.length) res.write(body);
    });
    child.on('close', () => {
      if (!headersDone) {
        record.status = 502;
        res.writeHead(502).end('git http-backend failed\n');
      } else res.end();
    });
    res.on('close', () => child.kill());
  }
}

/** Backends running: killed if this process exits with one in flight (a test worker that ends mid-request). */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** The request's whole body; undefined when the request closed before its end (the client went away). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    // After 'end' this changes nothing; before it, the body will never be whole.
    req.once('close', () => resolve(undefined));
    req.once('error', () => resolve(undefined));
  });
}

/** Starts a server over `root`; stop it with `await server.stop()`. */
export async function startGitHttpServer(opts: GitHttpServerOptions): Promise<GitHttpServer> {
  const s = new GitHttpServer(opts);
  await s.start();
  return s;
}
