// `keystonectl resume`: follow Git again after a forced manual apply suspended the sync.
import { parseArgs } from 'node:util';
import { AGENT_OPTIONS, AGENT_USAGE, agentClient, withAgentErrors } from '../agent-client.js';
import { EXIT, UsageError, type CliIo } from '../io.js';

export const RESUME_USAGE = `keystonectl resume [--json] ${AGENT_USAGE}`;

export async function resume(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: 'boolean', default: false }, ...AGENT_OPTIONS },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const client = agentClient(values, io);
  return withAgentErrors('resume', io, values.json, async () => {
    const r = await client.post<{ resumed: boolean; revision?: string; sync?: { following?: string } }>('/v1/resume');
    if (values.json) io.stdout.write(JSON.stringify(r, null, 2) + '\n');
    else if (!r.resumed)
      io.stdout.write(
        `the sync was not suspended; nothing to resume (the agent follows ${r.sync?.following ?? 'its source'})\n`,
      );
    else
      io.stdout.write(
        r.revision
          ? `the Git sync resumed: applying ${r.revision}, the newest commit found while it was suspended\n`
          : 'the Git sync resumed: looking for a new commit now\n',
      );
    return EXIT.OK;
  });
}
