// Shared fixtures of the container runtime tests: components through the real schema, owner tags, clean-up by label.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import Docker from 'dockerode';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { recipeSchema, type Recipe } from '../../src/core/recipe.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import type { RecipeInput } from './runtime-fixtures.js';
import { engineSocket } from '../support/test-engine.js';
import { parse as parseSchema } from '../../src/core/valid.js';

type RunInput = NonNullable<NonNullable<RecipeInput['lifecycle']>['run']>;
export type ContainerInput = NonNullable<RunInput['container']>;

/** The engine the suites run against (KEYSTONE_TEST_ENGINE: Docker's socket, or Podman's Docker-compatible one). */
export const docker = new Docker({ socketPath: engineSocket() });

/** A label on containers the tests create by hand (foreign ones), so that clean-up finds them too. */
export const FOREIGN_LABEL = 'io.keystone.test-foreign';

/** An owner tag unique to this test run, with a common prefix so clean-up finds every runtime's containers. */
export function ownerTagFor(run: string, name: string): string {
  return `${run}-${name}`;
}

export const newRunId = () => `ks-test-${randomBytes(4).toString('hex')}`;

/** A container component through the real schema (defaults as in production), with a fresh hash. */
export function containerComponent(
  name: string,
  container: ContainerInput,
  more: { health?: RunInput['health'] } = {},
): DesiredComponent {
  const raw: RecipeInput = {
    metadata: { name: `com.test.${name}`, version: '1.0.0' },
    lifecycle: { run: { type: 'container', container, ...(more.health && { health: more.health }) } },
  };
  const recipe = parseSchema(recipeSchema, raw) as Recipe;
  const hash = `v1:${randomBytes(32).toString('hex')}`;
  return {
    name,
    index: 0,
    recipePath: `recipes/${name}.toml`,
    entry: { name, recipe: `recipes/${name}.toml` },
    recipe,
    dependencies: [],
    hash,
  };
}

/** Force-removes every container whose owner label starts with `run`, and every foreign one labelled with it. */
export async function removeTestContainers(run: string): Promise<void> {
  const list = await docker.listContainers({ all: true });
  const ours = list.filter((c) => (c.Labels[LABELS.owner] ?? '').startsWith(run) || c.Labels[FOREIGN_LABEL] === run);
  await Promise.all(
    ours.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
}

/** The state of a container as the engine reports it, or undefined when it is gone. */
export async function inspectOrUndefined(id: string): Promise<Docker.ContainerInspectInfo | undefined> {
  try {
    return await docker.getContainer(id).inspect();
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return undefined;
    throw e;
  }
}

/** A TCP port below 32768 (outside the kernel's ephemeral range) that is free on 127.0.0.1 and 0.0.0.0 right now. */
export async function freeLowPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port below 32768 after 50 tries');
}
