// The agent harness for tests that run containers: the agent's owner label (every container it creates carries it)
// and a clean-up that removes whatever container a test left, by that label.
import { ownerTag } from '../../src/agent/orphan-sweep.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import { AgentHarness } from './agent-harness.js';
import { removeContainersLabelled } from './busybox-image.js';

export class ContainerHarness extends AgentHarness {
  /** `io.keystone.owner` of this agent's containers. */
  readonly tag = ownerTag(this.stateDir);

  override async cleanup(): Promise<void> {
    await super.cleanup();
    removeContainersLabelled(LABELS.owner, this.tag);
  }
}
