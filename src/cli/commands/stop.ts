// `keystonectl stop NAME`: stop a component through the agent, its hard dependents first; they stay stopped until started.
// `keystonectl stop --all`: every component, dependents first (the reverse of the start order), each held stopped: the
// one command that takes a device's whole stack down without stopping the agent (which leaves it running on exit).
import { parseArgs } from 'node:util';
import { AGENT_OPTIONS, AGENT_USAGE, agentClient, names, withAgentErrors, type AgentClient } from '../agent-client.js';
import { componentArg, componentPath } from '../component-arg.js';
import { ANSWER_MARGIN_MS, parseWaitArgs } from '../wait-args.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { componentList } from '../render/status-table.js';

export const STOP_USAGE = `keystonectl stop (NAME | --all) [--timeout 2m] [--json] ${AGENT_USAGE}`;

type Json = Record<string, unknown>;

const HELD = 'held stopped until `keystonectl start`';

export async function stop(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      all: { type: 'boolean', default: false },
      timeout: { type: 'string', default: '2m' },
      json: { type: 'boolean', default: false },
      ...AGENT_OPTIONS,
    },
  });
  if (values.all && positionals.length) throw new UsageError('give a component NAME or --all, not both');
  const name = values.all ? undefined : componentArg(positionals, 'stop');
  const { timeoutMs, timeout } = parseWaitArgs(values);
  const client = agentClient(values, io);
  const stopOne = (n: string) =>
    client.post<Json>(componentPath(n, 'stop'), { query: { timeout }, timeoutMs: timeoutMs + ANSWER_MARGIN_MS });
  return withAgentErrors('stop', io, values.json, async () => {
    if (name === undefined) return stopAll(client, stopOne, io, values.json);
    const result = await stopOne(name);
    if (values.json) io.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else {
      const stopped = Array.isArray(result?.stopOrder)
        ? names(result.stopOrder)
        : Array.isArray(result?.stopped)
          ? names(result.stopped)
          : [name];
      // The agent names the hard dependents (a composite's own members are not its dependents).
      const dependents = Array.isArray(result?.stoppedDependents)
        ? names(result.stoppedDependents)
        : stopped.filter((n) => n !== name);
      const why = dependents.length
        ? `${dependents.join(', ')} ${dependents.length === 1 ? 'depends' : 'depend'} hard on ${name}; `
        : '';
      io.stdout.write(`stopped: ${stopped.join(' ')}\n(${why}${HELD})\n`);
    }
    return EXIT.OK;
  });
}

/**
 * Each component (a composite as one) in the reverse of the start order the agent lists them in, so that dependents,
 * ordering ones included, stop before what they depend on. A failure stops the walk: what is stopped so far is said.
 */
async function stopAll(
  client: AgentClient,
  stopOne: (name: string) => Promise<Json>,
  io: CliIo,
  json: boolean,
): Promise<number> {
  const listed = componentList(await client.get('/v1/components'))
    .map((c) => (typeof c === 'object' && c !== null ? (c as Json).name : undefined))
    .filter((n): n is string => typeof n === 'string');
  const stopped: string[] = [];
  const results: Json[] = [];
  try {
    for (const n of listed.reverse()) {
      const r = await stopOne(n);
      results.push(r);
      for (const s of Array.isArray(r?.stopOrder) ? names(r.stopOrder) : [n]) if (!stopped.includes(s)) stopped.push(s);
    }
  } catch (e) {
    if (stopped.length && !json)
      io.stderr.write(`keystonectl stop: stopped before the failure: ${stopped.join(' ')}\n`);
    throw e;
  }
  if (json) io.stdout.write(JSON.stringify({ stopped, results }, null, 2) + '\n');
  else
    io.stdout.write(
      stopped.length
        ? `stopped: ${stopped.join(' ')}\n(all ${HELD}; the agent keeps running)\n`
        : 'no components to stop\n',
    );
  return EXIT.OK;
}
