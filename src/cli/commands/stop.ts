// `keystonectl stop NAME`: stop a component through the agent, its hard dependents first; they stay stopped until started.
import { parseArgs } from 'node:util';
import { ANSWER_MARGIN_MS, AGENT_OPTIONS, AGENT_USAGE, agentClient, componentArg, componentPath, names, parseWaitArgs, withAgentErrors } from '../agent-client.js';
import { EXIT, type CliIo } from '../io.js';

export const STOP_USAGE = `keystonectl stop NAME [--timeout 2m] [--json] ${AGENT_USAGE}`;

export async function stop(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { timeout: { type: 'string', default: '2m' }, json: { type: 'boolean', default: false }, ...AGENT_OPTIONS },
  });
  const name = componentArg(positionals, 'stop');
  const { timeoutMs, timeout } = parseWaitArgs(values);
  const client = agentClient(values, io);
  return withAgentErrors('stop', io, values.json, async () => {
    const result = await client.post<Record<string, unknown>>(componentPath(name, 'stop'), { query: { timeout }, timeoutMs: timeoutMs + ANSWER_MARGIN_MS });
    if (values.json) io.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else {
      const stopped = Array.isArray(result?.stopOrder) ? names(result.stopOrder) : Array.isArray(result?.stopped) ? names(result.stopped) : [name];
      // The agent names the hard dependents (a composite's own members are not its dependents).
      const dependents = Array.isArray(result?.stoppedDependents) ? names(result.stoppedDependents) : stopped.filter((n) => n !== name);
      const why = dependents.length ? `${dependents.join(', ')} ${dependents.length === 1 ? 'depends' : 'depend'} hard on ${name}; ` : '';
      io.stdout.write(`stopped: ${stopped.join(' ')}\n(${why}held stopped until \`keystonectl start\`)\n`);
    }
    return EXIT.OK;
  });
}
