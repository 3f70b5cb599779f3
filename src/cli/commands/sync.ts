// `keystonectl sync`: the agent looks at its source now (POST /v1/sync) and, unless --no-wait, says what became of
// what it found: applied, held at the rollout gate, refused, or nothing new.
import { parseArgs } from 'node:util';
import { AGENT_OPTIONS, AGENT_USAGE, agentClient, withAgentErrors } from '../agent-client.js';
import { ANSWER_MARGIN_MS } from '../wait-args.js';
import { formatDuration, parseDuration } from '../../core/duration.js';
import { isCommitId } from '../../git/commit-id.js';
import { EXIT, UsageError, type CliIo } from '../io.js';

export const SYNC_USAGE = `keystonectl sync [--no-wait] [--now] [--timeout 10m] [--json] ${AGENT_USAGE}`;

/** Long enough for a fetch and an apply that starts slow components (each has its own start budget). */
const DEFAULT_TIMEOUT = '10m';

type Json = Record<string, unknown>;
const text = (v: unknown, fallback = '?'): string => (typeof v === 'string' && v !== '' ? v : fallback);
/** A commit by its first 12 hex digits, as status shows held commits; other revisions (dir:…, manual:…) whole. */
const short = (id: unknown): string => (typeof id === 'string' && isCommitId(id) ? id.slice(0, 12) : text(id));

/** SPEC §9's exit codes for what the look led to: refused is bad input (2), an apply that failed is 1. */
const EXIT_OF: Record<string, number> = {
  applied: EXIT.OK,
  unchanged: EXIT.OK,
  held: EXIT.OK,
  applying: EXIT.OK,
  failed: EXIT.FAILED,
  rejected: EXIT.BAD_INPUT,
};

/** One line per outcome, and the commits still held at the gate under it. */
export function renderSyncOutcome(r: Json): string {
  const rev = short(r.revision);
  const summary = text(r.summary, '');
  let line: string;
  switch (r.outcome) {
    case 'applied':
      line = `applied ${rev}: ${summary}`;
      break;
    case 'failed':
      line = `apply of ${rev} failed: ${summary}`;
      break;
    case 'rejected':
      line = `${rev} rejected: ${summary}; still running ${r.applied === null ? 'nothing' : short(r.applied)}`;
      break;
    case 'held':
      // The reason says `held: …` itself (the rollout gate's, an update lock's): not twice.
      line = summary.startsWith('held: ') ? `${rev} ${summary}` : `${rev} held: ${summary}`;
      break;
    case 'applying':
      line = `${rev} is being applied`;
      break;
    default:
      line = r.revision === null ? summary : `${summary} (${rev})`;
      // What runs failed here and has not recovered: nothing new is no good news (SPEC §5).
      if (r.appliedOutcome === 'failure')
        line +=
          '; its apply failed on this device (keystonectl history): only a new revision changes that (a fix, a git revert, an edit of the directory)';
  }
  const held = Array.isArray(r.rollout) ? r.rollout.filter((h): h is Json => typeof h === 'object' && h !== null) : [];
  // The held commit the line is about is not repeated.
  const more = held
    .filter((h) => !(r.outcome === 'held' && h.revision === r.revision))
    .map((h) => `\ncommit ${short(h.revision)} (wave ${text(h.wave)}): ${text(h.reason, 'held')}`);
  return `${line}${more.join('')}\n`;
}

export async function sync(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    allowNegative: true,
    options: {
      // Waiting is the default: a script that syncs wants to read the outcome (or the commit's note) next.
      wait: { type: 'boolean', default: true },
      timeout: { type: 'string', default: DEFAULT_TIMEOUT },
      json: { type: 'boolean', default: false },
      // SPEC §19: the revision waiting for its maintenance window goes now (update locks still hold).
      now: { type: 'boolean', default: false },
      ...AGENT_OPTIONS,
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const timeoutMs = parseDuration(values.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0)
    throw new UsageError(`--timeout takes a duration such as 10m or 90s, not "${values.timeout}"`);
  const client = agentClient(values, io);
  return withAgentErrors('sync', io, values.json, async () => {
    if (!values.wait) {
      const r = await client.post<Json>('/v1/sync', { ...(values.now && { query: { now: 'true' } }) });
      io.stdout.write(
        values.json
          ? JSON.stringify(r, null, 2) + '\n'
          : 'sync requested: the agent looks at its source now (not waited for)\n',
      );
      return EXIT.OK;
    }
    const r = await client.post<Json>('/v1/sync', {
      query: { wait: 'done', timeout: formatDuration(timeoutMs), ...(values.now && { now: 'true' }) },
      timeoutMs: timeoutMs + ANSWER_MARGIN_MS,
    });
    io.stdout.write(values.json ? JSON.stringify(r, null, 2) + '\n' : renderSyncOutcome(r));
    if (r.outcome === 'unchanged' && r.appliedOutcome === 'failure') return EXIT.FAILED;
    return EXIT_OF[String(r.outcome)] ?? EXIT.OK;
  });
}
