// `update_strategy = "start-first"` (the zero-downtime roll): the new instance starts beside the old one, and only once
// it is healthy is the old one stopped. A new instance that never gets healthy (or exits) is removed and the old one
// keeps serving; the apply fails. The record keeps the old hash and instance until the new one is healthy, so an agent
// that dies mid-roll adopts the old one and rolls again. The worker (component-worker.ts) owns the generation and the
// record; this file is the roll's sequence.
import type { DesiredComponent } from '../core/desired-state.js';
import { formatDuration } from '../core/duration.js';
import type { Instance } from '../runtime/runtime.js';
import type { StartOutcome, WorkerDeps } from './worker-deps.js';
import { startBudgetMs, waitHealthy } from './health-watch.js';

export interface Roll {
  name: string;
  deps: WorkerDeps;
  c: DesiredComponent;
  revision: string;
  old: Instance;
  /** False once the worker's generation moved on (a stop, another start): the roll is superseded. */
  current: () => boolean;
  /** Aborted with the worker's generation. */
  signal: AbortSignal;
  /** The old instance serves on, supervised again as before the roll. */
  keepOld: () => void;
  /** The healthy new instance takes over the record and supervision. */
  takeOver: (inst: Instance) => void;
}

/** `pid 41002` or a short container id, for log lines. */
export function refText(ref: Instance['ref']): string {
  return ref.kind === 'process' ? `pid ${ref.pid}` : ref.id.slice(0, 12);
}

export async function rollStartFirst(r: Roll): Promise<StartOutcome> {
  const { c, deps, old } = r;
  const paths = deps.paths(r.name);
  const runtime = deps.runtime(c.recipe.lifecycle.run.type);
  const log = { component: r.name, revision: r.revision };
  deps.log.info(
    { ...log, old: refText(old.ref) },
    'rolling: starting the new instance beside the old one (start-first)',
  );
  const keepOld = (reason: string): StartOutcome => {
    r.keepOld();
    deps.log.error({ ...log, old: refText(old.ref) }, `roll failed: ${reason}; the old instance keeps serving`);
    return { ok: false, reason: `${reason}; the old instance keeps serving (start-first)` };
  };
  try {
    await deps.startSlot(() => runtime.install(c, paths, new AbortController().signal));
  } catch (e) {
    return keepOld(`install failed: ${(e as Error).message}`);
  }
  let inst: Instance;
  try {
    inst = await deps.startSlot(() => runtime.start(c, paths));
  } catch (e) {
    return keepOld(`start failed: ${(e as Error).message}`);
  }
  if (!r.current()) {
    await runtime.stop(inst.ref, deps.graceMs);
    return { ok: false, reason: 'superseded' };
  }
  deps.log.info({ ...log, state: 'starting', new: refText(inst.ref) }, 'rolling: new instance started');
  const abort = new AbortController();
  const outcome = await Promise.race([
    inst.exited.then(() => 'exited' as const),
    waitHealthy(c, paths, deps.now() + startBudgetMs(c), AbortSignal.any([abort.signal, r.signal]), deps).then((ok) =>
      ok ? ('healthy' as const) : ('timeout' as const),
    ),
  ]);
  abort.abort();
  if (outcome !== 'healthy' || !r.current()) {
    await runtime.stop(inst.ref, deps.graceMs);
    if (!r.current()) return { ok: false, reason: 'superseded' };
    return keepOld(
      outcome === 'exited'
        ? 'the new instance exited before it was healthy'
        : `the new instance was not healthy within its start budget of ${formatDuration(startBudgetMs(c))}`,
    );
  }
  // Healthy: the new one takes over the record (through the same writes as any start, so that waits and metrics see
  // it), then the old one goes.
  r.takeOver(inst);
  deps.log.info(
    { ...log, new: refText(inst.ref), old: refText(old.ref) },
    'rolling: new instance healthy; stopping the old one',
  );
  await deps.runtime(old.ref.kind).stop(old.ref, deps.graceMs);
  return { ok: true };
}
