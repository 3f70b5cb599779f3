// The container engine, found the way the container runtime finds it (runtime/container-engine.ts): a failure only
// when the plan runs containers; otherwise what answers is said for information, and no engine is no fault.
import type { DesiredComponent } from '../core/desired-state.js';
import {
  clientFor,
  connectEngine,
  PING_TIMEOUT_MS,
  type Engine,
  type EngineChoice,
} from '../runtime/container-engine.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import type { CurrentPlan } from './current-plan.js';
import type { DoctorFacts } from './doctor-facts.js';

export async function checkContainerEngine(
  plan: CurrentPlan,
  facts: Pick<DoctorFacts, 'env' | 'engineSockets'>,
): Promise<CheckResult> {
  const containers =
    plan.kind === 'known' ? plan.state.components.filter((c) => c.recipe.lifecycle.run.type === 'container') : [];
  const opts = { env: facts.env, ...(facts.engineSockets && { socketPaths: facts.engineSockets }) };
  if (containers.length === 0) {
    const unneeded =
      plan.kind === 'known' ? 'not needed: the plan runs no containers' : 'needed only when the plan runs containers';
    try {
      return pass('container-engine', `${await describeEngine(await connectEngine('auto', opts))}; ${unneeded}`);
    } catch (e) {
      return skip('container-engine', `${(e as Error).message}; ${unneeded}`);
    }
  }
  // One look per engine the recipes ask for (`runtime = "auto" | "docker" | "podman"`).
  const byChoice = new Map<EngineChoice, DesiredComponent[]>();
  for (const c of containers) {
    const choice = c.recipe.lifecycle.run.container?.runtime ?? 'auto';
    byChoice.set(choice, [...(byChoice.get(choice) ?? []), c]);
  }
  const seen: string[] = [];
  for (const [choice, cs] of byChoice) {
    const names = cs.map((c) => c.name).join(', ');
    try {
      seen.push(`${await describeEngine(await connectEngine(choice, opts))} for ${names}`);
    } catch (e) {
      return fail(
        'container-engine',
        `the plan runs ${names} as container${cs.length === 1 ? '' : 's'}, and ${(e as Error).message}`,
        choice === 'podman'
          ? "start Podman's API socket (systemctl enable --now podman.socket), or name it (--podman-socket PATH)"
          : 'start the engine (systemctl start docker), or name its socket (--docker-socket PATH, or DOCKER_HOST=unix:///PATH)',
        (e as { code?: string }).code,
      );
    }
  }
  return pass('container-engine', seen.join('; '));
}

/** `docker at /var/run/docker.sock (Docker 27.3.1, API 1.47)`. */
async function describeEngine(engine: Engine): Promise<string> {
  let version = '';
  try {
    // Bounded like the ping: the engine's own client waits for ever (for its long calls).
    const v = await clientFor(engine.endpoint, PING_TIMEOUT_MS).version();
    version = ` (${engine.kind === 'podman' ? 'Podman' : 'Docker'} ${v.Version}, API ${v.ApiVersion})`;
  } catch {
    // It answered the ping: which version it is is only for the reader.
  }
  return `${engine.kind} at ${engine.endpoint.label}${version}`;
}
