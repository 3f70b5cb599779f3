// The eager start schedule of SPEC §4: a component starts the moment all of its dependencies are healthy.

export type StartStatus = 'waiting' | 'starting' | 'healthy' | 'failed' | 'skipped';

export interface ScheduleInput {
  /** Components to start, in start order (the tie-break among those ready at once). */
  startOrder: readonly string[];
  /** Dependencies (hard and ordering alike order starts) of every component to start. */
  dependencies: ReadonlyMap<string, readonly string[]>;
  /** Dependencies outside the start set that run healthy now (no-touch components) satisfy a dependent. */
  satisfiedOutside: ReadonlySet<string>;
}

export interface ScheduleStep {
  /** Start these now. */
  start: string[];
  /** These can never start (a dependency failed or was skipped), with the dependency to blame. */
  skip: Array<{ name: string; because: string }>;
}

/**
 * Given the status of each component, what to start now under `concurrency` (counting those
 * already starting) and what to skip. Pure: the executor calls it after every status change.
 */
export function nextSteps(
  input: ScheduleInput,
  status: ReadonlyMap<string, StartStatus>,
  concurrency: number,
): ScheduleStep {
  const inSet = new Set(input.startOrder);
  const skip: ScheduleStep['skip'] = [];
  const skipped = new Set<string>();
  // Skips propagate in start order, so one pass reaches every transitive dependent.
  for (const name of input.startOrder) {
    if (status.get(name) !== 'waiting') continue;
    for (const dep of input.dependencies.get(name) ?? []) {
      const s = inSet.has(dep)
        ? skipped.has(dep)
          ? 'skipped'
          : status.get(dep)
        : input.satisfiedOutside.has(dep)
          ? 'healthy'
          : 'failed';
      if (s === 'failed' || s === 'skipped') {
        skip.push({ name, because: dep });
        skipped.add(name);
        break;
      }
    }
  }
  let running = 0;
  for (const s of status.values()) if (s === 'starting') running++;
  const start: string[] = [];
  for (const name of input.startOrder) {
    if (running + start.length >= concurrency) break;
    if (status.get(name) !== 'waiting' || skipped.has(name)) continue;
    const ready = (input.dependencies.get(name) ?? []).every((dep) =>
      inSet.has(dep) ? status.get(dep) === 'healthy' : input.satisfiedOutside.has(dep),
    );
    if (ready) start.push(name);
  }
  return { start, skip };
}

/** The layer-by-layer schedule's makespan, for the benchmark's comparison with the eager one. */
export function layeredMakespan(layers: readonly (readonly string[])[], duration: (name: string) => number): number {
  return layers.reduce((t, layer) => t + Math.max(0, ...layer.map(duration)), 0);
}

/** The critical path: the lower bound of any schedule with unlimited parallelism. */
export function criticalPath(
  startOrder: readonly string[],
  dependencies: ReadonlyMap<string, readonly string[]>,
  duration: (name: string) => number,
): number {
  const finish = new Map<string, number>();
  for (const name of startOrder) {
    const ready = Math.max(0, ...(dependencies.get(name) ?? []).map((d) => finish.get(d) ?? 0));
    finish.set(name, ready + duration(name));
  }
  return Math.max(0, ...finish.values());
}
