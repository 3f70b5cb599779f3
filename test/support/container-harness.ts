// The agent harness for tests that run containers: the agent's owner label (every container it creates carries it),
// the engine the suites run against (KEYSTONE_TEST_ENGINE, test-engine.ts: with podman, the agent is given
// --podman-socket) and a clean-up that removes whatever container a test left, by that label.
import { ownerTag } from '../../src/agent/orphan-sweep.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import { AgentHarness, type AgentProcess, type StartOptions } from './agent-harness.js';
import { removeContainersLabelled } from './busybox-image.js';
import { agentEngineArgs, testEngine, type TestEngine } from './test-engine.js';

export class ContainerHarness extends AgentHarness {
  /** `io.keystone.owner` of this agent's containers. */
  readonly tag = ownerTag(this.stateDir);

  /** `engine`: the one its agents are pointed at, and that the clean-up removes containers from. */
  constructor(readonly engine: TestEngine = testEngine()) {
    super();
  }

  override start(opts: StartOptions): AgentProcess {
    // The engine's flags first: a test's own flags (parseArgs keeps the last) may override them.
    return super.start({ ...opts, args: [...agentEngineArgs(this.engine), ...(opts.args ?? [])] });
  }

  override async cleanup(): Promise<void> {
    await super.cleanup();
    removeContainersLabelled(LABELS.owner, this.tag, this.engine);
  }
}
