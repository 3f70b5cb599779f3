// The fleet bench's reading of the Git server's request records: what each is (a look, a fetch, a report), their sums
// by kind, what a commit's window cost per device, and a least-squares fit against the fleet's size.
import type { ServedRequest } from '../../dist/dev/git-http-server.js';
import { round } from '../lib/stats.js';

/** Requests and bytes of one kind. */
export interface KindTally {
  requests: number;
  bytesOut: number;
  bytesIn: number;
  adverts: number;
  advertBytes: number;
  posts: number;
  non200: number;
}
/** Requests and bytes of a window, and by kind. */
export interface Tally {
  requests: number;
  bytesOut: number;
  bytesIn: number;
  byKind: Record<string, KindTally>;
}
export interface LinearFit {
  slope: number;
  intercept: number;
  r2: number;
}

/**
 * What a record is: a poll's look (protocol v2 upload-pack: the ls-refs POST, and on an agent's first look the
 * capabilities GET before it), a fetch (v1 upload-pack: advertisement GET, pack POST) or a report (receive-pack:
 * the POST, and the advertisement GET only after a push refused as stale).
 */
export const kindOf = (r: ServedRequest): string => {
  const service = /service=(git-[a-z-]+)/.exec(r.query)?.[1] ?? /\/(git-[a-z-]+)$/.exec(r.path)?.[1];
  // Anything asked of a reports repository is reporting (a reporter fetches its ref back after a refused push).
  if (service === 'git-receive-pack' || /\/reports-[^/]+\.git\//.test(r.path)) return 'report';
  if (service === 'git-upload-pack') return r.protocol === 'version=2' ? 'look' : 'fetch';
  return 'other';
};
export const isAdvert = (r: ServedRequest): boolean => r.method === 'GET' && /\/info\/refs$/.test(r.path);
export const tally = (recs: ServedRequest[]): Tally => {
  const t: Tally = { requests: recs.length, bytesOut: 0, bytesIn: 0, byKind: {} };
  for (const r of recs) {
    t.bytesOut += r.bytes;
    t.bytesIn += r.received;
    const k = (t.byKind[kindOf(r)] ??= {
      requests: 0,
      bytesOut: 0,
      bytesIn: 0,
      adverts: 0,
      advertBytes: 0,
      posts: 0,
      non200: 0,
    });
    k.requests++;
    k.bytesOut += r.bytes;
    k.bytesIn += r.received;
    if (isAdvert(r)) {
      k.adverts++;
      k.advertBytes += r.bytes;
    } else if (r.method === 'POST') k.posts++;
    if (r.status !== 200) k.non200++;
  }
  return t;
};
export const kind = (t: Tally, k: string): KindTally =>
  t.byKind[k] ?? { requests: 0, bytesOut: 0, bytesIn: 0, adverts: 0, advertBytes: 0, posts: 0, non200: 0 };

/**
 * What one commit's window cost, per device, by kind: its fetches (advertisement GET and pack POST; the pack apart)
 * and its reports (pending, success); the looks are counted by the caller (one per device, the one that found it).
 */
export const windowCost = (win: Tally, n: number) => {
  const f = kind(win, 'fetch');
  const rp = kind(win, 'report');
  return {
    fetch: {
      requests: round(f.requests / n, 2),
      bytes: round((f.bytesOut + f.bytesIn) / n),
      packBytes: round((f.bytesOut + f.bytesIn - f.advertBytes) / n),
      advertBytes: round(f.advertBytes / Math.max(1, f.adverts)),
    },
    report: {
      requests: round(rp.requests / n, 2),
      bytes: round((rp.bytesOut + rp.bytesIn) / n),
      posts: rp.posts,
      non200: rp.non200 + f.non200,
    },
  };
};

/** Records of `method` and kind `kind` (look: protocol v2 upload-pack). */
export function recordsOf(recs: ServedRequest[], method: string, kind: string): ServedRequest[] {
  return recs.filter(
    (r) => r.method === method && /git-upload-pack$/.test(r.path) && (kind !== 'look' || r.protocol === 'version=2'),
  );
}

/** Least squares y = intercept + slope · x, with r². */
export function linearFit(points: [number, number][]): LinearFit {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
    syy += (y - my) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : NaN;
  const intercept = my - slope * mx;
  const r2 = sxx > 0 && syy > 0 ? (sxy * sxy) / (sxx * syy) : NaN;
  return { slope: +slope.toFixed(2), intercept: +intercept.toFixed(1), r2: +r2.toFixed(5) };
}
