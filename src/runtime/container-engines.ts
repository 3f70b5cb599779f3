// The container engines of a ContainerRuntime: Docker's and Podman's, found once per recipe `runtime` and
// remembered, which engine holds which container, and the containers carrying this agent's owner label. Apart from
// container-runtime.ts, which runs components on whatever engine this finds.
import type Docker from 'dockerode';
import { connectEngine, type Engine, type EngineChoice, type EngineKind } from './container-engine.js';
import { ContainerError, engineMessage, engineStatus } from './container-error.js';
import type { ContainerRuntimeOptions } from './container-runtime-options.js';
import { LABELS } from './container-spec.js';
import { answeringEndpoints, engineUnavailable, listLabelled } from './engine-http.js';

/** A container carrying this agent's owner label, as the engine lists it. */
export interface OwnedContainer {
  id: string;
  name: string;
  component: string;
  hash: string;
  /** The engine's state: `created`, `running`, `exited`, … */
  state: string;
  engine: EngineKind;
}

/** A container id as the engines' own tools show it. */
export const short = (id: string) => id.slice(0, 12);

export class ContainerEngines {
  private readonly engines = new Map<EngineChoice, Promise<Engine>>();
  /** Which engine holds a container this runtime created or adopted. */
  readonly located = new Map<string, Engine>();

  constructor(private readonly opts: Pick<ContainerRuntimeOptions, 'env' | 'socketPaths' | 'log' | 'ownerTag'>) {}

  /** The engine a recipe's `runtime` names, found once and remembered; a failed discovery is retried next time. */
  engine(choice: EngineChoice = 'auto'): Promise<Engine> {
    let p = this.engines.get(choice);
    if (!p) {
      p = connectEngine(choice, { env: this.opts.env, socketPaths: this.opts.socketPaths });
      this.engines.set(choice, p);
      // Said once per recipe `runtime`: which engine, on which socket (auto takes Docker's when both answer).
      p.then(
        (e) => this.opts.log?.info({ runtime: choice, engine: e.kind, socket: e.endpoint.label }, 'container engine'),
        () => this.engines.delete(choice),
      );
    }
    return p;
  }

  /** The container and its engine: the one that created or adopted it, else every engine that answers. */
  async locate(id: string): Promise<{ engine: Engine; info: Docker.ContainerInspectInfo } | undefined> {
    const known = this.located.get(id);
    const candidates = known ? [known] : await this.reachableEngines();
    for (const engine of candidates) {
      try {
        return { engine, info: await engine.docker.getContainer(id).inspect() };
      } catch (e) {
        if (engineStatus(e) !== 404)
          throw new ContainerError(
            'KS_CONTAINER_ENGINE_UNAVAILABLE',
            `cannot inspect container ${short(id)}: ${engineMessage(e)}`,
            { containerId: id },
            { cause: e },
          );
      }
    }
    return undefined;
  }

  /** Docker's and Podman's engines, those that answer, each once (a Podman socket may serve both names). */
  async reachableEngines(): Promise<Engine[]> {
    const out: Engine[] = [];
    for (const choice of ['docker', 'podman'] as const) {
      try {
        const e = await this.engine(choice);
        if (!out.some((o) => o.endpoint.label === e.endpoint.label)) out.push(e);
      } catch {
        // not on this device
      }
    }
    if (out.length === 0) await this.engine('auto'); // throws, naming every socket tried
    return out;
  }

  /**
   * Every container (running or not) with this agent's owner label, on every engine that answers. Asked over plain
   * HTTP (engine-http.ts): the agent's start lists its containers on every device with an engine, and most have none
   * of ours, so dockerode is not loaded for it.
   */
  async listOwned(): Promise<OwnedContainer[]> {
    const endpoints = await answeringEndpoints({ env: this.opts.env, socketPaths: this.opts.socketPaths });
    // None answered: said as the client's discovery says it (why for each socket), without loading the client.
    if (endpoints.length === 0)
      throw await engineUnavailable({ env: this.opts.env, socketPaths: this.opts.socketPaths });
    const lists = [];
    for (const ep of endpoints) lists.push(...(await listLabelled(ep, `${LABELS.owner}=${this.opts.ownerTag}`)));
    return lists.map((c) => this.ownedOf(c, c.engine));
  }

  private ownedOf(
    c: { Id: string; Names: string[]; Labels: Record<string, string>; State: string },
    engine: EngineKind,
  ): OwnedContainer {
    return {
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      component: c.Labels[LABELS.component] ?? '',
      hash: c.Labels[LABELS.hash] ?? '',
      state: c.State,
      engine,
    };
  }
}
