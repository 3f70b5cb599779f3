// A loopback HTTP proxy in front of the real Git smart-HTTP server (git-http-server.ts) that misbehaves on cue: it
// cuts a fetch mid-pack, truncates or corrupts the pack, answers 500 or 503 with Retry-After, stalls after the
// headers, drips the answer, or pads the ref advertisement with a huge number of refs. The fault is switched at run
// time (`proxy.fault = …`), and every request is counted with what was done to it, so a test can wait for a fault to
// have been met rather than sleep. The pack faults rewrite the side band (pkt-lines) so that the framing stays valid
// where the fault is not about framing: the client must find the damage in the pack itself.
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a request to a Git server is, from its path and body. */
export type GitRequestKind = 'advertisement' | 'ls-refs' | 'fetch' | 'other';

export type GitFault =
  | { kind: 'none' }
  /** Sends the first `afterBytes` bytes of the fetch's answer, then destroys the connection (no end of the chunked body). */
  | { kind: 'cut'; afterBytes: number }
  /** Ends the fetch's answer cleanly (a flush, a proper end of the body) with only the first half of the pack in it. */
  | { kind: 'truncate' }
  /** Flips bytes of the pack: in the middle of its objects, or in its trailing SHA-1 (the framing stays valid). */
  | { kind: 'corrupt'; where: 'objects' | 'trailer' }
  /** Answers with this status, without asking the server: every request, or only the fetch's. */
  | { kind: 'status'; status: number; retryAfter?: string; on: 'all' | 'fetch' }
  /** Sends the fetch's status and headers, then nothing, until the client goes away. */
  | { kind: 'stall' }
  /** Sends the fetch's answer `bytes` bytes every `everyMs`. */
  | { kind: 'drip'; bytes: number; everyMs: number }
  /**
   * Adds `refs` refs (about 65 bytes each: 200,000 is 13 MB) to the protocol v1 ref advertisement a fetch reads, or to
   * the answer of a look (ls-refs), whose prefix a server is then ignoring. Generated as it is sent, never held whole.
   * After the refs the server listed, or with `first` before them (after a v1 advertisement's first line): a listing
   * out of order.
   */
  | { kind: 'huge-advertisement'; refs: number; on: 'advertisement' | 'ls-refs'; first?: boolean };

export interface ProxiedRequest {
  kind: GitRequestKind;
  method: string;
  path: string;
  /** The fault applied to it ('none' when it was passed through). */
  fault: GitFault['kind'];
  /** Bytes of answer body sent to the client. */
  bytes: number;
  at: number;
}

const FLUSH = Buffer.from('0000');

export class FaultyGitProxy {
  fault: GitFault = { kind: 'none' };
  readonly requests: ProxiedRequest[] = [];
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private listenPort = 0;

  constructor(private readonly upstreamPort: number) {}

  /** http://127.0.0.1:PORT/<name>.git, through the proxy. */
  url(name: string): string {
    return `http://127.0.0.1:${this.listenPort}/${name}.git`;
  }

  get port(): number {
    return this.listenPort;
  }

  /** The requests of `kind` (any kind when absent) that met `fault` (any when absent), from index `from`. */
  met(opts: { kind?: GitRequestKind; fault?: GitFault['kind']; from?: number } = {}): ProxiedRequest[] {
    return this.requests
      .slice(opts.from ?? 0)
      .filter(
        (r) =>
          (opts.kind === undefined || r.kind === opts.kind) && (opts.fault === undefined || r.fault === opts.fault),
      );
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listenPort, '127.0.0.1', () => resolve());
    });
    this.listenPort = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and cuts every connection (a stalled one included). */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const url = req.url ?? '/';
    const kind = classify(req.method ?? 'GET', url, body);
    const fault = this.fault;
    const applies = appliesTo(fault, kind);
    const record: ProxiedRequest = {
      kind,
      method: req.method ?? 'GET',
      path: url,
      fault: applies ? fault.kind : 'none',
      bytes: 0,
      at: Date.now(),
    };
    this.requests.push(record);
    const send = (chunk: Buffer) => {
      record.bytes += chunk.length;
      return res.write(chunk);
    };
    if (applies && fault.kind === 'status') {
      res.writeHead(fault.status, {
        'content-type': 'text/plain',
        ...(fault.retryAfter !== undefined && { 'retry-after': fault.retryAfter }),
      });
      res.end(`HTTP ${fault.status} (the faulty proxy)\n`);
      return;
    }
    const up = await this.forward(req, url, body);
    const headers = { ...up.headers };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    delete headers['connection'];
    if (!applies || up.statusCode !== 200) {
      res.writeHead(up.statusCode ?? 502, headers);
      for await (const chunk of up) send(chunk as Buffer);
      res.end();
      return;
    }
    switch (fault.kind) {
      case 'stall':
        up.resume();
        res.writeHead(200, headers);
        res.flushHeaders();
        return; // nothing more, until the client (or stop()) closes the connection
      case 'cut': {
        res.writeHead(200, headers);
        let left = fault.afterBytes;
        for await (const c of up) {
          const chunk = c as Buffer;
          if (chunk.length >= left) {
            if (left > 0) send(chunk.subarray(0, left));
            // Let the bytes go out, then drop the connection without ending the body.
            await new Promise((r) => setTimeout(r, 50));
            res.socket?.destroy();
            up.destroy();
            return;
          }
          left -= chunk.length;
          send(chunk);
        }
        res.end();
        return;
      }
      case 'drip': {
        const whole = await readAll(up);
        res.writeHead(200, headers);
        for (let at = 0; at < whole.length && !res.destroyed; at += fault.bytes) {
          send(whole.subarray(at, at + fault.bytes));
          await new Promise((r) => setTimeout(r, fault.everyMs));
        }
        res.end();
        return;
      }
      case 'truncate':
      case 'corrupt': {
        const whole = await readAll(up);
        res.writeHead(200, headers);
        send(damagePack(whole, fault));
        res.end();
        return;
      }
      case 'huge-advertisement': {
        const whole = await readAll(up);
        res.writeHead(200, headers);
        const drained = () =>
          new Promise<void>((resolve) => {
            const done = () => (res.off('drain', done), res.off('close', done), resolve());
            res.on('drain', done).on('close', done);
          });
        // A protocol v2 capability advertisement lists no refs: passed as it came, and not counted as met.
        if (
          !(await padAdvertisement(
            whole,
            fault.refs,
            (b) => !res.destroyed && send(b),
            drained,
            () => res.destroyed,
            fault.first === true,
          ))
        )
          record.fault = 'none';
        res.end();
        return;
      }
      default:
        res.writeHead(200, headers);
        for await (const chunk of up) send(chunk as Buffer);
        res.end();
    }
  }

  private forward(req: IncomingMessage, url: string, body: Buffer): Promise<IncomingMessage> {
    const headers = { ...req.headers, host: `127.0.0.1:${this.upstreamPort}`, 'content-length': String(body.length) };
    delete headers['transfer-encoding'];
    return new Promise((resolve, reject) => {
      const out = httpRequest(
        { host: '127.0.0.1', port: this.upstreamPort, method: req.method, path: url, headers },
        resolve,
      );
      out.on('error', reject);
      out.end(body);
    });
  }
}

export async function startFaultyGitProxy(upstreamPort: number): Promise<FaultyGitProxy> {
  const p = new FaultyGitProxy(upstreamPort);
  await p.start();
  return p;
}

/** The pack faults hit the fetch (the upload-pack POST that wants objects); the others say what they hit. */
function appliesTo(fault: GitFault, kind: GitRequestKind): boolean {
  switch (fault.kind) {
    case 'none':
      return false;
    case 'status':
      return fault.on === 'all' || kind === 'fetch';
    case 'huge-advertisement':
      return kind === fault.on;
    default:
      return kind === 'fetch';
  }
}

function classify(method: string, url: string, body: Buffer): GitRequestKind {
  if (method === 'GET' && /\/info\/refs\?service=git-upload-pack$/.test(url)) return 'advertisement';
  if (method !== 'POST' || !/\/git-upload-pack$/.test(url)) return 'other';
  const text = body.toString('latin1');
  if (text.includes('command=ls-refs')) return 'ls-refs';
  return /^[0-9a-f]{4}want [0-9a-f]{40}/.test(text) || text.includes('command=fetch') ? 'fetch' : 'other';
}

async function readAll(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

interface PktLine {
  /** -1 for a flush. */
  band: number;
  data: Buffer;
  raw: Buffer;
}

function pktLines(buf: Buffer): { lines: PktLine[]; rest: Buffer } {
  const lines: PktLine[] = [];
  let pos = 0;
  while (pos + 4 <= buf.length) {
    const len = parseInt(buf.toString('latin1', pos, pos + 4), 16);
    if (Number.isNaN(len) || (len > 0 && len < 4) || pos + Math.max(len, 4) > buf.length) break;
    if (len === 0) lines.push({ band: -1, data: Buffer.alloc(0), raw: buf.subarray(pos, pos + 4) });
    else lines.push({ band: buf[pos + 4]!, data: buf.subarray(pos + 5, pos + len), raw: buf.subarray(pos, pos + len) });
    pos += Math.max(len, 4);
  }
  return { lines, rest: buf.subarray(pos) };
}

function bandLine(band: number, data: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from((data.length + 5).toString(16).padStart(4, '0') + String.fromCharCode(band), 'latin1'),
    data,
  ]);
}

/**
 * The fetch answer with its pack (side band 1) truncated to half, or with bytes flipped, re-framed in valid pkt-lines
 * and ended with a flush: what reaches the client looks whole, only the pack is not. The lines before the pack
 * (shallow, NAK) and the progress band pass as they came.
 */
export function damagePack(
  answer: Buffer,
  fault: { kind: 'truncate' } | { kind: 'corrupt'; where: 'objects' | 'trailer' },
): Buffer {
  const { lines } = pktLines(answer);
  const firstBand = lines.findIndex((l) => l.band >= 1 && l.band <= 3);
  if (firstBand < 0) return answer;
  const head = lines.slice(0, firstBand).map((l) => l.raw);
  const pack = Buffer.concat(
    lines
      .slice(firstBand)
      .filter((l) => l.band === 1)
      .map((l) => l.data),
  );
  let damaged: Buffer;
  if (fault.kind === 'truncate') damaged = pack.subarray(0, Math.floor(pack.length / 2));
  else {
    damaged = Buffer.from(pack);
    // The middle of the objects (past the 12-byte header), or the first bytes of the 20-byte trailer.
    const at = fault.where === 'trailer' ? damaged.length - 20 : 12 + Math.floor((damaged.length - 32) / 2);
    for (let i = at; i < Math.min(at + 4, damaged.length); i++) damaged[i] = damaged[i]! ^ 0xff;
  }
  const out = [...head];
  for (let at = 0; at < damaged.length; at += 8192) out.push(bandLine(1, damaged.subarray(at, at + 8192)));
  out.push(FLUSH);
  return Buffer.concat(out);
}

/**
 * Sends the advertisement (protocol v1, or a v2 ls-refs answer) with `count` more refs before its last flush, each
 * naming the commit of its first ref line; written as it goes (with the socket's backpressure), never held whole.
 * False when it has no ref to copy (a protocol v2 capability advertisement), sent unchanged.
 */
async function padAdvertisement(
  answer: Buffer,
  count: number,
  send: (b: Buffer) => boolean,
  drained: () => Promise<unknown>,
  gone: () => boolean,
  first = false,
): Promise<boolean> {
  const lastFlush = answer.length - 4;
  const oid = /([0-9a-f]{40}) refs\//.exec(answer.toString('latin1'))?.[1];
  if (oid === undefined || answer.toString('latin1', lastFlush) !== '0000') {
    send(answer);
    return false;
  }
  // `first`: before the server's refs, or for a v1 advertisement right after its first ref line (which carries the
  // capabilities a client reads there), so the listing is out of order.
  const split = first ? firstRefLineEnd(answer) : lastFlush;
  send(answer.subarray(0, split));
  const line = (i: number) => {
    const text = `${oid} refs/pull/${i}/head\n`;
    return (text.length + 4).toString(16).padStart(4, '0') + text;
  };
  for (let i = 0; i < count && !gone();) {
    let chunk = '';
    for (let n = 0; n < 2000 && i < count; n++, i++) chunk += line(i);
    if (!send(Buffer.from(chunk, 'latin1')) && !gone()) await drained();
  }
  send(first ? answer.subarray(split) : FLUSH);
  return true;
}

/** Where a v1 advertisement's first ref line ends (after `# service=…` and its flush); 0 for an ls-refs answer. */
function firstRefLineEnd(answer: Buffer): number {
  if (!answer.toString('latin1', 4, 14).startsWith('# service=')) return 0;
  let pos = parseInt(answer.toString('latin1', 0, 4), 16);
  pos += 4; // the header's flush
  return pos + parseInt(answer.toString('latin1', pos, pos + 4), 16);
}
