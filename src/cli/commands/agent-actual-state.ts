// The local agent's side of `keystonectl apply-dry` (apply-dry.ts): what it runs, as the diff's actual state, and
// what its device policy refuses of a plan. Apart from the command because it is all one conversation with the agent.
import type { ActualComponent, ActualState } from '../../core/diff.js';
import type { DesiredState } from '../../core/desired-state.js';
import { devicePolicyFromView } from '../../core/device-policy.js';
import { OperationError, type ErrorCode } from '../../core/errors.js';
import { checkDevicePolicy, withFlagHint } from '../../core/policy-check.js';
import { hostPolicyFacts } from '../../runtime/policy-host.js';
import { AgentApiError, AgentUnreachableError, type AgentClient } from '../agent-client.js';
import type { PolicyProblem } from '../render/policy-refusal.js';

/** States in which a component counts as running for the diff (as the agent's own store maps them). */
const LIVE = new Set(['installing', 'starting', 'running', 'unhealthy', 'backoff']);

/**
 * What the local agent runs, as the diff's actual state, from `GET /v1/components` (with the token: component views
 * carry configuration values). Undefined when nothing answers quickly; an explicit `--agent` that does not answer is
 * an error. An agent that answers but refuses the token is always an error: comparing with the empty state instead
 * would print a reconcile of a fresh device for one that runs.
 */
export async function agentActualState(
  client: AgentClient,
  url: string,
  required: boolean,
): Promise<ActualState | undefined> {
  type View = {
    name: string;
    hash: string;
    version: string;
    state: string;
    held: boolean;
    dependencies: ActualComponent['dependencies'];
    inputs?: Record<string, string> | null;
    members?: View[];
  };
  let views: View[];
  try {
    views = await client.get<View[]>('/v1/components', { timeoutMs: required ? 10_000 : 1_000 });
    if (!Array.isArray(views)) throw new Error('not a component list');
  } catch (e) {
    if (e instanceof AgentApiError && e.status === 401)
      // The agent's own code for a 401 (KS_TOKEN_MISSING, KS_TOKEN_INVALID), relayed as it came.
      throw new OperationError(
        e.code as ErrorCode,
        `the agent at ${url} answered but needs its API token to show what it runs (or pass --empty or --base REF): ${e.message}`,
      );
    if (required)
      throw new OperationError(
        'KS_AGENT_UNREACHABLE',
        e instanceof AgentUnreachableError ? e.message : `no agent answers at ${url}: ${(e as Error).message}`,
      );
    return undefined;
  }
  // A composite's entry carries its members: they are what runs.
  return {
    components: views
      .flatMap((v) => (Array.isArray(v.members) ? v.members : [v]))
      .map((v) => ({
        name: v.name,
        hash: v.hash,
        version: v.version,
        running: LIVE.has(v.state),
        held: v.held || v.state === 'crash-looping',
        dependencies: v.dependencies,
        ...(v.inputs && { inputs: v.inputs }),
      })),
  };
}

/**
 * Every component of `state` the agent's device policy refuses, checked here against this machine's paths and users
 * (apply-dry against the local agent runs on the device). [] when the agent predates GET /v1/policy.
 */
export async function refusedByAgentPolicy(
  client: AgentClient,
  state: DesiredState,
  stateDir: string | undefined,
): Promise<PolicyProblem[]> {
  let policy;
  try {
    policy = devicePolicyFromView(await client.get('/v1/policy'));
  } catch (e) {
    if (e instanceof AgentApiError && e.status === 404) return [];
    throw e;
  }
  if (!policy)
    throw new OperationError(
      'KS_AGENT_BAD_ANSWER',
      'the agent answered GET /v1/policy with something that is not a device policy',
    );
  // The agent's state directory is guarded too, when we know where it is.
  const host = hostPolicyFacts(stateDir !== undefined ? { stateDir } : {});
  return state.components.flatMap((c) =>
    checkDevicePolicy(c, policy, host).map((i) => ({ component: c.name, file: c.recipePath, ...withFlagHint(i) })),
  );
}
