// What the page fetched, as DevTools sees it: every request with its bytes on the wire, when the page has settled, and
// the bytes by kind (the page's files against API data).
import type { BrowserContext, Page } from 'playwright-core';
import { performance } from 'node:perf_hooks';
import { sleep } from '../lib/stats.js';

/** A request as the DevTools events describe it. */
interface Recorded {
  url: string;
  method: string;
  type?: string;
  status?: number;
  mimeType?: string;
  encoding?: string;
  headerBytes: number;
  chunkBytes: number;
  wireBytes?: number;
  failed?: string;
  finished: boolean;
}
/** A request as the bench reports it. */
export interface RequestRow {
  path: string;
  method: string;
  status: number | undefined;
  type: string | undefined;
  encoding: string | undefined;
  bytes: number;
  stream?: true;
  open?: boolean;
  failed?: string;
}
export interface Tally {
  totalBytes: number;
  fileBytes: number;
  fileRequests: number;
  apiBytes: number;
  apiRequests: number;
  jsonBytes: number;
  streamBytes: number;
  requests: RequestRow[];
}

/** Every request of `page` as DevTools sees it (from before the navigation), with its bytes on the wire. */
export async function recordNetwork(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page);
  const requests = new Map<string, Recorded>();
  const rec = (id: string) => {
    let r = requests.get(id);
    if (!r) requests.set(id, (r = { url: '', method: '', headerBytes: 0, chunkBytes: 0, finished: false }));
    return r;
  };
  cdp.on('Network.requestWillBeSent', (e) =>
    Object.assign(rec(e.requestId), { url: e.request.url, method: e.request.method, type: e.type }),
  );
  cdp.on('Network.responseReceived', (e) => {
    const headers = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    Object.assign(rec(e.requestId), {
      status: e.response.status,
      mimeType: e.response.mimeType,
      encoding: headers['content-encoding'],
      headerBytes: e.response.encodedDataLength ?? 0,
    });
  });
  cdp.on('Network.dataReceived', (e) => (rec(e.requestId).chunkBytes += e.encodedDataLength ?? 0));
  cdp.on('Network.loadingFinished', (e) =>
    Object.assign(rec(e.requestId), { wireBytes: e.encodedDataLength, finished: true }),
  );
  cdp.on('Network.loadingFailed', (e) => Object.assign(rec(e.requestId), { failed: e.errorText, finished: true }));
  await cdp.send('Network.enable');
  const isStream = (r: Recorded) => r.mimeType === 'text/event-stream';
  return {
    requests,
    /** Resolves once nothing but an event stream has been pending for `quietMs` (at most `maxMs`). */
    async settled(quietMs = 250, maxMs = 10_000) {
      const t0 = performance.now();
      let quietSince = performance.now();
      let count = requests.size;
      while (performance.now() - t0 < maxMs) {
        const pending = [...requests.values()].some((r) => !r.finished && !isStream(r));
        if (pending || requests.size !== count) {
          quietSince = performance.now();
          count = requests.size;
        } else if (performance.now() - quietSince >= quietMs) return true;
        await sleep(25);
      }
      return false;
    },
    /** Bytes by kind: the page's files vs API data (JSON, the event stream), and the list of requests. */
    tally(origin: string): Tally {
      const list = [...requests.values()].map((r): RequestRow => {
        const path = r.url.startsWith(origin) ? r.url.slice(origin.length).split('?', 1)[0]! : r.url;
        const stream = isStream(r);
        const bytes = r.finished ? (r.wireBytes ?? 0) : r.headerBytes + r.chunkBytes;
        return {
          path,
          method: r.method,
          status: r.status,
          type: r.mimeType,
          encoding: r.encoding,
          bytes,
          ...(stream && { stream: true, open: !r.finished }),
          ...(r.failed && { failed: r.failed }),
        };
      });
      const sum = (xs: RequestRow[]) => xs.reduce((n, r) => n + r.bytes, 0);
      const api = list.filter((r) => r.path.startsWith('/v1/'));
      const files = list.filter((r) => !r.path.startsWith('/v1/'));
      return {
        totalBytes: sum(list),
        fileBytes: sum(files),
        fileRequests: files.length,
        apiBytes: sum(api),
        apiRequests: api.length,
        jsonBytes: sum(api.filter((r) => !r.stream)),
        streamBytes: sum(api.filter((r) => r.stream)),
        requests: list,
      };
    },
  };
}
