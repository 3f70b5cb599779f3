// `keystonectl start NAME`: start a component through the agent once its dependencies are healthy, releasing a hold.
import { parseArgs } from 'node:util';
import { ANSWER_MARGIN_MS, AGENT_OPTIONS, AGENT_USAGE, agentClient, componentArg, componentPath, names, parseWaitArgs, shownId, withAgentErrors } from '../agent-client.js';
import { EXIT, type CliIo } from '../io.js';

export const START_USAGE = `keystonectl start NAME [--wait health|started|none] [--timeout 2m] [--json] ${AGENT_USAGE}`;

export async function start(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      wait: { type: 'string', default: 'health' },
      timeout: { type: 'string', default: '2m' },
      json: { type: 'boolean', default: false },
      ...AGENT_OPTIONS,
    },
  });
  const name = componentArg(positionals, 'start');
  const { wait, timeoutMs, timeout } = parseWaitArgs(values);
  const client = agentClient(values, io);
  return withAgentErrors('start', io, values.json, async () => {
    const result = await client.post<Record<string, unknown>>(componentPath(name, 'start'), { query: { wait, timeout }, timeoutMs: timeoutMs + ANSWER_MARGIN_MS });
    if (values.json) io.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else if (wait === 'none') io.stdout.write(`start of ${name} handed to the agent (not waited for)\n`);
    else {
      // `started` is empty when it was running already: a start never restarts anything.
      const started = Array.isArray(result?.started) ? names(result.started) : [name];
      const id = shownId(result?.pid ?? result?.containerId);
      io.stdout.write(started.length ? `started: ${started.join(' ')}${id === '-' ? '' : ` (${id})`}\n` : `${name} was already running${id === '-' ? '' : ` (${id})`}\n`);
    }
    return EXIT.OK;
  });
}
