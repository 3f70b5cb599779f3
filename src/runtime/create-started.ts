// A component's container created and started (container-runtime.ts's start), and how the engine's refusal of the
// create is said. Apart from the runtime class: one step of start, given what it needs of the runtime.
import type Docker from 'dockerode';
import type { DesiredComponent } from '../core/desired-state.js';
import type { Engine } from './container-engine.js';
import { ContainerError, engineMessage, engineStatus } from './container-error.js';
import { ensureImageLogged, type ImagePullLog } from './ensure-image-logged.js';

/** What a create needs of the runtime: where a pull is told, its clock, and the scrubbing of secret values. */
export interface CreateWith {
  pullLog: ImagePullLog;
  now: () => number;
  /** The component's secret values taken out of a text (ComponentSecrets.scrub). */
  scrub: (c: DesiredComponent, text: string) => string;
}

/** The container created and started; one that cannot start is removed again. */
export async function createStarted(
  engine: Engine,
  c: DesiredComponent,
  request: Docker.ContainerCreateOptions,
  w: CreateWith,
): Promise<Docker.Container> {
  const policy = c.recipe.lifecycle.run.container!.pull_policy;
  let container: Docker.Container;
  try {
    container = await engine.docker.createContainer(request);
  } catch (e) {
    if (engineStatus(e) !== 404 || policy === 'never') throw createError(c, e, w);
    // No such image: pulled at install, removed since (a prune). The policy allows pulling it again.
    await ensureImageLogged(engine, c, policy, w.pullLog, w.now);
    container = await engine.docker
      .createContainer(request)
      .catch((e2: unknown) => Promise.reject(createError(c, e2, w)));
  }
  try {
    await container.start();
  } catch (e) {
    await container.remove({ force: true, v: true }).catch(() => {});
    throw new ContainerError(
      'KS_START_FAILED',
      `cannot start container of ${c.name}: ${w.scrub(c, engineMessage(e))}`,
      { component: c.name, containerId: container.id },
    );
  }
  return container;
}

function createError(c: DesiredComponent, e: unknown, w: CreateWith): ContainerError {
  const image = c.recipe.lifecycle.run.container!.image;
  if (engineStatus(e) === 404)
    return new ContainerError(
      'KS_IMAGE_MISSING',
      `image ${image} of ${c.name} is not on this device: ${engineMessage(e)}`,
      { component: c.name, image },
      { cause: e },
    );
  // The engine's refusal of a create request may quote it (an env entry): said without the values, no cause kept.
  return new ContainerError(
    'KS_START_FAILED',
    `cannot create container of ${c.name}: ${w.scrub(c, engineMessage(e))}`,
    { component: c.name, image },
  );
}
