// `keystonectl status`: the applied revision and every component as the running agent sees them.
import { parseArgs } from 'node:util';
import {
  AGENT_OPTIONS,
  AGENT_USAGE,
  AgentApiError,
  agentClient,
  withAgentErrors,
  type AgentClient,
} from '../agent-client.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { devicePolicyFromView } from '../../core/device-policy.js';
import { componentList, renderStatus, revisionOf, type StatusExtras } from '../render/status-table.js';

export const STATUS_USAGE = `keystonectl status [--json] ${AGENT_USAGE}`;

/**
 * `GET /v1/revision` (`rev` undefined when the agent has applied nothing yet: its 404), and what it says besides: the
 * agent's pid and version, the newest refused revision (in the 404's body too).
 */
async function revision(client: AgentClient): Promise<{ rev?: unknown; extras: StatusExtras }> {
  const extrasOf = (body: unknown): StatusExtras => {
    const o = typeof body === 'object' && body !== null ? (body as StatusExtras) : {};
    return {
      ...(o.agent !== undefined && { agent: o.agent }),
      ...(o.rejected !== undefined && { rejected: o.rejected }),
    };
  };
  try {
    const rev = await client.get('/v1/revision');
    return { rev, extras: extrasOf(rev) };
  } catch (e) {
    if (e instanceof AgentApiError && e.status === 404) return { extras: extrasOf(e.body) };
    throw e;
  }
}

export async function status(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: 'boolean', default: false }, ...AGENT_OPTIONS },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const client = agentClient(values, io);
  return withAgentErrors('status', io, values.json, async () => {
    const [components, { rev, extras }] = await Promise.all([client.get('/v1/components'), revision(client)]);
    // The device policy rides on the revision (an agent from before it has none, and none is shown).
    const policy = devicePolicyFromView((rev as { policy?: unknown } | undefined)?.policy);
    const list = componentList(components);
    const applied = revisionOf(rev);
    if (applied?.unsigned === true)
      io.stderr.write(
        'keystonectl status: WARNING: the applied revision is UNSIGNED: signatures are not checked (development only)\n',
      );
    // The API's own JSON, both answers side by side; `agent` and `rejected` on top too when the agent sends them
    // (before the first apply there is no revision to carry them).
    if (values.json)
      io.stdout.write(JSON.stringify({ revision: rev ?? null, components: list, ...extras }, null, 2) + '\n');
    else io.stdout.write(renderStatus(list, applied, nowMs(io), policy, extras));
    return EXIT.OK;
  });
}
