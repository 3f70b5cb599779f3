// The container pulls' progress as the agent's `pull` events, throttled (run-agent.ts hands it to the container
// runtime). Apart from the composition root: what it does, not how it is wired.
import type { EventEmitter } from 'node:events';
import type { Logger } from '../log/logger.js';
import type { ContainerRuntimeOptions } from '../runtime/container-runtime-options.js';
import type { AgentEventMap } from './agent-events.js';

/** `events()` is the agent's once it runs (undefined before). */
export function pullProgressEvents(
  events: () => EventEmitter<AgentEventMap> | undefined,
  log: Logger,
): NonNullable<ContainerRuntimeOptions['onPullProgress']> {
  const lastPull = new Map<string, { at: number; status: string }>();
  // For `keystonectl apply`'s display: a line a second per component while bytes flow, and every other status.
  return (component, p) => {
    const t = Date.now();
    const downloading = p.status === 'Downloading' || p.status === 'Extracting';
    const last = lastPull.get(component);
    if (last && (downloading ? t - last.at < 1000 : last.status === p.status)) return;
    lastPull.set(component, { at: t, status: p.status });
    try {
      events()?.emit('pull', {
        component,
        image: p.image,
        status: p.status,
        currentBytes: p.currentBytes,
        totalBytes: p.totalBytes,
      });
    } catch (e) {
      log.error({ err: e as Error }, 'a pull progress listener failed');
    }
  };
}
