// `keystonectl start NAME`: start a component through the agent once its dependencies are healthy, releasing a hold.
// `keystonectl start --all`: the mirror of `stop --all`: every component, dependencies first (the agent's start order),
// each started and its hold released: the one command that brings back a stack `stop --all` took down.
import { parseArgs } from 'node:util';
import {
  AGENT_OPTIONS,
  AGENT_USAGE,
  agentClient,
  names,
  shownId,
  withAgentErrors,
  type AgentClient,
} from '../agent-client.js';
import { componentArg, componentPath } from '../component-arg.js';
import { ANSWER_MARGIN_MS, parseWaitArgs, type WaitFor } from '../wait-args.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { componentList } from '../render/status-table.js';

export const START_USAGE = `keystonectl start (NAME | --all) [--wait health|started|none] [--timeout 2m] [--json] ${AGENT_USAGE}`;

type Json = Record<string, unknown>;

export async function start(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      all: { type: 'boolean', default: false },
      wait: { type: 'string', default: 'health' },
      timeout: { type: 'string', default: '2m' },
      json: { type: 'boolean', default: false },
      ...AGENT_OPTIONS,
    },
  });
  if (values.all && positionals.length) throw new UsageError('give a component NAME or --all, not both');
  const name = values.all ? undefined : componentArg(positionals, 'start');
  const { wait, timeoutMs, timeout } = parseWaitArgs(values);
  const client = agentClient(values, io);
  const startOne = (n: string) =>
    client.post<Json>(componentPath(n, 'start'), { query: { wait, timeout }, timeoutMs: timeoutMs + ANSWER_MARGIN_MS });
  return withAgentErrors('start', io, values.json, async () => {
    if (name === undefined) return startAll(client, startOne, io, values.json, wait);
    const result = await startOne(name);
    if (values.json) io.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else if (wait === 'none') io.stdout.write(`start of ${name} handed to the agent (not waited for)\n`);
    else {
      // `started` is empty when it was running already: a start never restarts anything.
      const started = Array.isArray(result?.started) ? names(result.started) : [name];
      const id = shownId(result?.pid ?? result?.containerId);
      io.stdout.write(
        started.length
          ? `started: ${started.join(' ')}${id === '-' ? '' : ` (${id})`}\n`
          : `${name} was already running${id === '-' ? '' : ` (${id})`}\n`,
      );
    }
    return EXIT.OK;
  });
}

/**
 * Each component (a composite as one) in the start order the agent lists them in, so that what a component depends
 * on is up (and, with the default `--wait health`, healthy) before it is started. Each start waits as `start NAME`
 * does; a failure stops the walk: what is started so far is said.
 */
async function startAll(
  client: AgentClient,
  startOne: (name: string) => Promise<Json>,
  io: CliIo,
  json: boolean,
  wait: WaitFor,
): Promise<number> {
  const listed = componentList(await client.get('/v1/components'))
    .map((c) => (typeof c === 'object' && c !== null ? (c as Json).name : undefined))
    .filter((n): n is string => typeof n === 'string');
  const started: string[] = [];
  const results: Json[] = [];
  try {
    for (const n of listed) {
      const r = await startOne(n);
      results.push(r);
      // Not waited for (`--wait none`), the agent's answer has no `started`: the name stands for what was asked.
      for (const s of Array.isArray(r?.started) ? names(r.started) : wait === 'none' ? [n] : [])
        if (!started.includes(s)) started.push(s);
    }
  } catch (e) {
    if (started.length && !json)
      io.stderr.write(`keystonectl start: started before the failure: ${started.join(' ')}\n`);
    throw e;
  }
  if (json) io.stdout.write(JSON.stringify({ started, results }, null, 2) + '\n');
  else if (wait === 'none')
    io.stdout.write(
      listed.length
        ? `start of ${listed.join(' ')} handed to the agent (not waited for)\n`
        : 'no components to start\n',
    );
  else
    io.stdout.write(
      started.length
        ? `started: ${started.join(' ')}\n`
        : listed.length
          ? 'every component was already running\n'
          : 'no components to start\n',
    );
  return EXIT.OK;
}
