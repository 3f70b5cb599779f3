// The pkt-lines of a receive-pack exchange: a line written (pktLine, FLUSH), and an answer's lines read as they stream,
// its `ERR` line and a connection lost on the way coded as delivery errors. Apart from receive-pack-push.ts, which
// builds the push and reads its report from these lines.
import type { IncomingMessage } from 'node:http';
import { StatusDeliveryError } from './commit-status.js';
import { aborted } from './receive-pack-http.js';

export const FLUSH = Buffer.from('0000');

export function pktLine(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
}

/** The pkt-lines of a body: each payload, or null for a flush. An `ERR` line from the server is thrown. */
export async function* pktLines(
  body: IncomingMessage,
  what: string,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer | null> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of chunks(body, what, signal)) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= 4) {
      const head = buf.subarray(0, 4).toString('latin1');
      const len = /^[0-9a-f]{4}$/.test(head) ? parseInt(head, 16) : NaN;
      if (Number.isNaN(len) || (len > 0 && len < 4))
        throw new StatusDeliveryError('KS_STATUS_SERVER_ERROR', `${what}: the answer is not pkt-lines`);
      if (len === 0) {
        buf = buf.subarray(4);
        yield null;
        continue;
      }
      if (buf.length < len) break;
      const payload = buf.subarray(4, len);
      buf = buf.subarray(len);
      if (payload.subarray(0, 4).toString('latin1') === 'ERR ')
        throw new StatusDeliveryError(
          'KS_STATUS_REJECTED',
          `${what}: the server said: ${payload.subarray(4).toString('utf8').trim()}`,
        );
      yield payload;
    }
  }
  if (buf.length)
    throw new StatusDeliveryError('KS_STATUS_SERVER_ERROR', `${what}: the answer ended in the middle of a line`);
}

/** The body's chunks; a connection lost or aborted on the way is coded like one lost before the answer. */
async function* chunks(body: IncomingMessage, what: string, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of body) yield chunk as Buffer;
  } catch (e) {
    if (signal?.aborted) throw aborted(signal, what);
    const code = (e as { code?: string }).code;
    throw new StatusDeliveryError(
      'KS_STATUS_UNREACHABLE',
      `${what}: the answer broke off (${code ?? (e instanceof Error ? e.message : String(e))})`,
      {},
      { cause: e },
    );
  }
}
