// `keystonectl history`: the agent's applies, newest first, one line each, paged with --before.
import { parseArgs } from 'node:util';
import { AGENT_OPTIONS, AGENT_USAGE, agentClient, withAgentErrors } from '../agent-client.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { timeMs, utc, waitingLine } from '../render/status-table.js';

export const HISTORY_USAGE = `keystonectl history [--limit N] [--before ID] [--json] ${AGENT_USAGE}`;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The entries of `GET /v1/history`: a bare array or `{entries|history|items: […]}`. */
export function historyEntries(body: unknown): Json[] {
  const list = Array.isArray(body) ? body : isObject(body) ? (body.entries ?? body.history ?? body.items) : undefined;
  return Array.isArray(list) ? list.filter(isObject) : [];
}

function wholeNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`${flag} must be a whole number ≥ 1, not "${text}"`);
  return n;
}

/** `12  2024-05-01 10:00:03Z  dir:3f2a…  success  3 started, 0 stopped, 1 untouched` */
export function renderHistory(entries: Json[]): string {
  const rows = entries.map((e) => {
    const at = timeMs(e.startedAt) ?? timeMs(e.time) ?? timeMs(e.at);
    const outcome =
      typeof e.outcome === 'string' ? e.outcome : e.finishedAt === undefined || e.finishedAt === null ? 'running' : '?';
    const summary = typeof e.summary === 'string' ? e.summary : '';
    return [String(e.id ?? '?'), at === undefined ? '-' : utc(at), String(e.revision ?? '?'), outcome, summary];
  });
  if (rows.length === 0) return 'no applies yet\n';
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => (i < 4 ? c.padEnd(widths[i]!) : c))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export async function history(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      limit: { type: 'string' },
      before: { type: 'string' },
      json: { type: 'boolean', default: false },
      ...AGENT_OPTIONS,
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const limit = wholeNumber(values.limit, '--limit');
  const before = wholeNumber(values.before, '--before');
  const client = agentClient(values, io);
  return withAgentErrors('history', io, values.json, async () => {
    const body = await client.get('/v1/history', { query: { limit, before } });
    if (values.json) {
      io.stdout.write(JSON.stringify(body, null, 2) + '\n');
      return EXIT.OK;
    }
    const entries = historyEntries(body);
    // A revision waiting for update locks has no row yet: said first (SPEC §19).
    const waiting = isObject(body) ? waitingLine(body.waiting, nowMs(io)).slice(1) : '';
    if (waiting) io.stdout.write(waiting + '\n');
    io.stdout.write(renderHistory(entries));
    // The cursor of the next, older page (the API's `nextBefore`; a full page's last id otherwise).
    const last = entries[entries.length - 1]?.id;
    const next =
      isObject(body) && 'nextBefore' in body
        ? body.nextBefore
        : limit !== undefined && entries.length === limit
          ? last
          : undefined;
    if (typeof next === 'number')
      io.stderr.write(
        `older entries: keystonectl history ${limit !== undefined ? `--limit ${limit} ` : ''}--before ${next}\n`,
      );
    return EXIT.OK;
  });
}
