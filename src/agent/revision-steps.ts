// What taking a revision up is given (and how an agent's options make it, revisionStepsOf) and what becomes of it: the
// types of take-revision.ts (steps 1–4) and apply-candidate.ts (step 5), apart so each step's file imports them
// without importing the other.
import type { DesiredState } from '../core/desired-state.js';
import type { Labels } from '../core/labels.js';
import type { Logger } from '../log/logger.js';
import type { RepoReader } from '../source/repo-reader.js';
import type { StateStore } from '../store/state-store.js';
import type { PublicKey } from '../trust/minisign.js';
import type { AgentUpdater } from '../agent-update/agent-updater.js';
import type { AgentOptions } from './agent-options.js';
import type { DeviceProblem, TrustSetting } from './agent-types.js';
import { deviceIdentity } from './device-identity.js';
import type { UpdateSteps } from './agent-update-step.js';
import type { Engine } from './engine.js';
import type { Outcomes } from './outcomes.js';
import type { RolloutHolds } from './rollout-holds.js';
import type { SecretSteps } from './revision-secrets.js';

/** What became of a revision the loop took up. */
export type RevisionOutcome =
  /** `passing`: refused for a reason that passes (the clock, the disk): the loop tries it again later. */
  | { kind: 'rejected'; reason: string; passing: boolean }
  | { kind: 'held' }
  | { kind: 'failed-before' }
  /** The commit the device runs, carried out in this run already. */
  | { kind: 'current' }
  | { kind: 'applied'; outcome: 'success' | 'failure' | 'interrupted' }
  | { kind: 'resumed'; outcome: 'success' | 'failure' }
  /** The agent switched to the version the revision asks for and is being restarted into it (SPEC §17). */
  | { kind: 'handover' }
  /** Not taken up now (another agent version while this one is on probation): the loop offers it again later. */
  | { kind: 'deferred'; reason: string }
  /** A component it would stop holds its update lock (SPEC §19): nothing applied; taken up again at the release. */
  | { kind: 'waiting'; reason: string };

export interface RevisionSteps extends UpdateSteps {
  trust: TrustSetting;
  /** `--plan`; without it fleet.toml picks the plan by the device's name and labels. */
  planFile?: string;
  fleet: { device: string; labels: Labels };
  /** What the plan was chosen with (device-identity.ts). */
  identity: string;
  following: 'git' | 'directory';
  check?: (state: DesiredState) => DeviceProblem[] | Promise<DeviceProblem[]>;
  useReader?: (reader: RepoReader) => void;
  store: StateStore;
  engine: Engine;
  outcomes: Outcomes;
  holds: RolloutHolds;
  log: Logger;
  now: () => number;
  /** The enrolment keys this device trusts (`--enrollment-key`): its gate counts only reports that verify (SPEC §15). */
  enrollmentKeys?: readonly PublicKey[];
  /** How this device opens the secrets a plan reads (SPEC §16); without it a plan that reads one is refused. */
  secrets?: SecretSteps;
  /** How this agent updates itself to the version a revision's [agent] names (SPEC §17); without it, it does not. */
  agentUpdate?: AgentUpdater;
}

/** The steps of an agent with `opts`, from the parts it assembled (agent.ts). */
export function revisionStepsOf(
  opts: AgentOptions,
  p: Pick<RevisionSteps, 'following' | 'store' | 'engine' | 'outcomes' | 'holds' | 'log' | 'now'> &
    Required<Pick<RevisionSteps, 'lockWait' | 'windowWait'>>,
): RevisionSteps {
  const { following, store, engine, outcomes, holds, log, now, lockWait, windowWait } = p;
  return {
    trust: opts.trust,
    ...(opts.planFile !== undefined && { planFile: opts.planFile }),
    // Without a fleet identity every revision names its plan (planFile, or a manual apply's).
    fleet: opts.fleet ?? { device: '', labels: {} },
    identity: deviceIdentity(opts.fleet, opts.planFile),
    following,
    ...(opts.check && { check: opts.check }),
    ...(opts.useReader && { useReader: opts.useReader }),
    store,
    engine,
    outcomes,
    holds,
    log,
    now,
    ...(opts.enrollmentKeys && { enrollmentKeys: opts.enrollmentKeys }),
    ...(opts.secrets && { secrets: opts.secrets }),
    ...(opts.agentUpdate && { agentUpdate: opts.agentUpdate }),
    lockWait,
    windowWait,
    ...(opts.window && { window: opts.window }),
    ...(opts.prefetch && { prefetch: opts.prefetch }),
  };
}
