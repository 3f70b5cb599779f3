// One test's fixture and agent harness, cleaned up however the test ends.
import { AgentHarness } from './agent-harness.js';
import { stackFixture, type StackFixture } from './stack-fixture.js';

export async function withStack(
  opts: Parameters<typeof stackFixture>[0],
  body: (fx: StackFixture, h: AgentHarness) => Promise<void>,
): Promise<void> {
  const fx = await stackFixture(opts);
  const h = new AgentHarness();
  try {
    await body(fx, h);
  } finally {
    await h.cleanup();
    fx.cleanup();
  }
}
