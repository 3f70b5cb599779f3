// Which container engine the container suites run against (SPEC §18: Docker or Podman, the same behaviour on both):
// KEYSTONE_TEST_ENGINE=docker (the default) or podman. The test helpers (images, clean-up by label, the dockerode
// client the tests inspect with) and the agents the ContainerHarness starts all use that engine; with podman, the
// recipes the stack fixture writes say `runtime = "podman"` and the agent is given `--podman-socket`.
//
//   .ci/podman-setup.sh && KEYSTONE_TEST_ENGINE=podman npx vitest run test/agent/containers*.e2e.test.ts …
//
// Podman is rootful Podman's Docker-compatible API (`podman system service`), at /run/podman/podman.sock or
// KEYSTONE_TEST_PODMAN_SOCKET. No vitest import: the requirement checks (skip-summary reporter) read it too.
import type { Requirement } from './requirement-checks.js';

export type TestEngine = 'docker' | 'podman';

export const TEST_ENGINE_ENV = 'KEYSTONE_TEST_ENGINE';

/** KEYSTONE_TEST_ENGINE, checked: a misspelt engine must not silently run the suites against Docker. */
export function testEngine(env: NodeJS.ProcessEnv = process.env): TestEngine {
  const value = env[TEST_ENGINE_ENV];
  if (value === undefined || value === '' || value === 'docker') return 'docker';
  if (value === 'podman') return 'podman';
  throw new Error(`${TEST_ENGINE_ENV}=${value}: the container suites run against docker or podman`);
}

/** Rootful Podman's API socket. */
export const podmanSocket = (env: NodeJS.ProcessEnv = process.env): string =>
  env.KEYSTONE_TEST_PODMAN_SOCKET || '/run/podman/podman.sock';

/** The engine's API socket the tests' own dockerode client talks to. */
export function engineSocket(engine: TestEngine = testEngine()): string {
  return engine === 'podman' ? podmanSocket() : '/var/run/docker.sock';
}

/**
 * The engine's command line: `docker`, or `podman --remote --url unix://…` (the same service the agent talks to, not
 * podman's own process on the storage). Both take the subcommands the tests use: import, image inspect, ps, rm, run.
 */
export function engineCli(engine: TestEngine = testEngine()): { cmd: string; args: string[] } {
  return engine === 'podman'
    ? { cmd: 'podman', args: ['--remote', '--url', `unix://${podmanSocket()}`] }
    : { cmd: 'docker', args: [] };
}

/** The requirement a container suite names for its engine (requirement-checks.ts). */
export function engineRequirement(engine: TestEngine = testEngine()): Requirement {
  return engine;
}

/** What the suites' titles say the engine is: "a real Docker engine", "a real Podman engine". */
export const engineName = (engine: TestEngine = testEngine()): string => (engine === 'podman' ? 'Podman' : 'Docker');

/** The agent's flags for the engine: with podman, its socket (the recipes say `runtime = "podman"`). */
export function agentEngineArgs(engine: TestEngine = testEngine()): string[] {
  return engine === 'podman' ? ['--podman-socket', podmanSocket()] : [];
}

/** `runtime` of the container recipes the fixtures write: unset (auto) on Docker, "podman" on Podman. */
export function recipeRuntime(engine: TestEngine = testEngine()): 'podman' | undefined {
  return engine === 'podman' ? 'podman' : undefined;
}

/**
 * A ContainerRuntime's `socketPaths` for the engine (the runtime tests build runtimes without an agent): on Podman,
 * Docker's places left out (an empty list) so that `auto` finds Podman even where Docker answers too.
 */
export function runtimeSocketPaths(
  engine: TestEngine = testEngine(),
): { docker: string[]; podman: string[] } | undefined {
  return engine === 'podman' ? { docker: [], podman: [podmanSocket()] } : undefined;
}
