// What looked wrong in the dashboard bench's visits: rows not running, the page not live, pending requests, console
// errors, requests answered with an error, URLs fetched twice in one visit.
import { fmt } from '../lib/stats.js';
import type { RequestRow } from './network.js';
import { KB } from './options.js';
import type { Run } from './visits.js';

/** The notes of `runs` (the last one shown). */
export function oddNotes(runs: Run[], last: Run): string[] {
  const odd: string[] = [];
  const notRunning = Object.entries(last.overview.states).filter(([, st]) => st !== 'running');
  if (notRunning.length)
    odd.push(`rows not running in the last run: ${notRunning.map(([n, st]) => `${n} ${st}`).join(', ')}`);
  if (last.overview.live !== 'live') odd.push(`#live reads ${JSON.stringify(last.overview.live)} in the last run`);
  for (const [k, x] of Object.entries({ login: runs.map((r) => r.login), overview: runs.map((r) => r.overview) })) {
    if (x.some((v) => !v.settled))
      odd.push(`${k}: requests still pending after 10 s in ${x.filter((v) => !v.settled).length} run(s)`);
    // Without a session, the page's GET /v1/session is answered 401 (docs/dashboard.md), which Chromium logs as an error.
    const expected401 = (text: string) => k === 'login' && /status of 401/.test(text);
    const errs = [...new Set(x.flatMap((v) => v.errors.filter((e) => !expected401(e))))];
    if (errs.length) odd.push(`${k}: ${errs.length} distinct console/page error(s): ${errs.join(' | ')}`);
    const isExpected = (r: RequestRow) =>
      k === 'login' && r.method === 'GET' && r.path === '/v1/session' && r.status === 401;
    const bad = [
      ...new Set(
        x.flatMap((v) =>
          v.requests
            .filter((r) => (r.failed || (r.status ?? 0) >= 400) && !isExpected(r))
            .map((r) => `${r.method} ${r.path} ${r.status ?? ''}${r.failed ? ` ${r.failed}` : ''}`),
        ),
      ),
    ];
    if (bad.length) odd.push(`${k}: requests answered with an error: ${bad.join(', ')}`);
    // The same URL fetched more than once before the page settled (every run counts, the last run is shown).
    const counts = new Map<string, number>();
    for (const r of x[x.length - 1]!.requests)
      counts.set(`${r.method} ${r.path}`, (counts.get(`${r.method} ${r.path}`) ?? 0) + 1);
    const repeated = [...counts].filter(([, c]) => c > 1);
    if (repeated.length) {
      const extra = x[x.length - 1]!.requests.filter(
        (r, i, all) => all.findIndex((o) => o.method === r.method && o.path === r.path) !== i,
      );
      odd.push(
        `${k}: fetched more than once on one visit (last run): ${repeated.map(([u, c]) => `${u} ×${c}`).join(', ')} (${fmt(KB(extra.reduce((n, r) => n + r.bytes, 0)), 1)} KB of the total)`,
      );
    }
  }
  return odd;
}
