// `keystonectl restart NAME`: restart a component and its hard dependents through the agent, and wait for them.
import { parseArgs } from 'node:util';
import { AGENT_OPTIONS, AGENT_USAGE, agentClient, names, shownId, withAgentErrors } from '../agent-client.js';
import { componentArg, componentPath } from '../component-arg.js';
import { ANSWER_MARGIN_MS, parseWaitArgs } from '../wait-args.js';
import { EXIT, type CliIo } from '../io.js';

export const RESTART_USAGE = `keystonectl restart NAME [--dry-run] [--wait health|started|none] [--timeout 2m] [--json] ${AGENT_USAGE}`;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export async function restart(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'dry-run': { type: 'boolean', default: false },
      wait: { type: 'string', default: 'health' },
      timeout: { type: 'string', default: '2m' },
      json: { type: 'boolean', default: false },
      ...AGENT_OPTIONS,
    },
  });
  const name = componentArg(positionals, 'restart');
  const { wait, timeoutMs, timeout } = parseWaitArgs(values);
  const client = agentClient(values, io);

  return withAgentErrors('restart', io, values.json, async () => {
    // 1. The dry run: the orders of the hard cascade, nothing touched.
    if (values['dry-run']) {
      const orders = await client.post<Json>(componentPath(name, 'restart'), { query: { dry: true } });
      if (values.json) io.stdout.write(JSON.stringify(orders, null, 2) + '\n');
      else
        io.stdout.write(`stop: ${names(orders?.stopOrder).join(' ')}\nstart: ${names(orders?.startOrder).join(' ')}\n`);
      return EXIT.OK;
    }

    // 2. The restart. The agent answers when the wait is over; a timeout (504) or a failure (502) comes back with the
    //    state of each component, which withAgentErrors prints (exit 1).
    const result = await client.post<Json>(componentPath(name, 'restart'), {
      query: { wait, timeout },
      timeoutMs: timeoutMs + ANSWER_MARGIN_MS,
    });
    if (values.json) {
      io.stdout.write(JSON.stringify(result, null, 2) + '\n');
      return EXIT.OK;
    }
    if (wait === 'none') {
      io.stdout.write(
        `restart of ${name} handed to the agent (not waited for)\nstop: ${names(result?.stopOrder).join(' ')}\nstart: ${names(result?.startOrder).join(' ')}\n`,
      );
      return EXIT.OK;
    }

    // 3. The new pids of the component and of each dependent it took along.
    // A composite has no pid of its own: each member's new one instead.
    const rows: Array<[string, string]> = isObject(result?.members)
      ? Object.entries(result.members).map(([n, v]): [string, string] => [n, shownId(v)])
      : [[name, shownId(result?.pid ?? result?.containerId)]];
    const own = rows.length;
    if (own === 0) rows.push([name, 'no members (replicas = 0)']);
    if (isObject(result?.dependents))
      for (const [n, v] of Object.entries(result.dependents)) rows.push([n, shownId(v)]);
    const waited = wait === 'health' ? `healthy again (timeout ${timeout})` : `started (timeout ${timeout})`;
    const deps = rows.length > own ? ` and ${rows.length - own} hard dependent${rows.length - own > 1 ? 's' : ''}` : '';
    const width = Math.max(...rows.map(([n]) => n.length));
    io.stdout.write(
      `restarted ${name}${deps}: ${waited}\n` + rows.map(([n, p]) => `  ${n.padEnd(width)}  ${p}`).join('\n') + '\n',
    );
    return EXIT.OK;
  });
}
