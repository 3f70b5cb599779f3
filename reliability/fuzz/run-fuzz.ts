// Runs fuzz targets with fast-check: N inputs each (arbitrary bytes, grammar-built documents, mutated corpus seeds),
// every input raced against a deadline, the heap sampled. The first input outside a target's contract stops that
// target, is shrunk by fast-check, and is saved as a file to replay (or to keep in the corpus once fixed).
import fc from 'fast-check';
import { loadCorpus, saveFinding } from './corpus.js';
import { ContractViolation, EscapedFinding, HangFinding, type FuzzTarget, type Outcome } from './fuzz-target.js';
import { HeapSampler, turnEventLoop } from './heap.js';
import { targetInputs } from './mutate.js';

/** A parser that takes longer than this on one input (a few KB at most) hangs, for the report. */
export const DEADLINE_MS = 1_000;

export interface Finding {
  kind: 'uncaught' | 'contract' | 'hang';
  message: string;
  stack?: string;
  /** fast-check's seed and path of the shrunk counterexample: `--seed S --path P` replays it. */
  seed: number;
  path: string;
  /** The counterexample as a file (replay with `--replay FILE`). */
  file?: string;
  /** Its first bytes, printable. */
  preview: string;
}

export interface TargetReport {
  target: string;
  parses: string;
  /** Inputs asked for; `inputs` is fewer when a finding stopped the target. */
  runs: number;
  inputs: number;
  accepted: number;
  refused: number;
  uncaught: number;
  overDeadline: number;
  slowestMs: number;
  /** Inputs over the deadline once but not when run again (a loaded machine), not counted as hangs. */
  retriedOverDeadline: number;
  /** Inputs that hit a known open finding (KnownOpenFinding), by its id. */
  knownOpen: Record<string, number>;
  seconds: number;
  heap: { startMb: number; peakMb: number; endMb: number; growthMb: number };
  seed: number;
  finding?: Finding;
}

export interface FuzzOptions {
  runs: number;
  seed: number;
  /** fast-check's replay path, with the seed of a finding. */
  path?: string;
  /** Where counterexamples are written; none when absent (tests). */
  findingsDir?: string;
  deadlineMs?: number;
  /** Told every `progressEvery` inputs (long runs show they are alive, and how far a stopped one got). */
  onProgress?: (inputs: number, seconds: number) => void;
  progressEvery?: number;
}

/** One input through the target's oracle, against the deadline. */
export async function checkOnce(
  target: FuzzTarget,
  input: Uint8Array,
  deadlineMs = DEADLINE_MS,
): Promise<{ outcome: Outcome; ms: number; knownOpen?: string }> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HangFinding(`${target.name}: no answer within ${deadlineMs} ms`)), deadlineMs);
  });
  // An exception thrown in a callback of the parser's (not through its promise) would take the agent down: it is this
  // input's finding, not the end of the run. One input runs at a time, so whatever escapes now is its doing.
  let onEscape: (e: unknown) => void = () => undefined;
  const escaped = new Promise<never>((_, reject) => {
    onEscape = (e) =>
      reject(
        new EscapedFinding(`${target.name}: an exception escaped the parser: ${(e as Error)?.stack ?? String(e)}`),
      );
  });
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  try {
    let outcome: Outcome;
    let knownOpen: string | undefined;
    try {
      outcome = await Promise.race([Promise.resolve().then(() => target.check(input)), deadline, escaped]);
    } catch (e) {
      knownOpen = target.knownOpen?.find((k) => k.matches(e))?.id;
      if (knownOpen === undefined) throw e;
      outcome = 'refused';
    }
    const ms = performance.now() - t0;
    // A synchronous parser cannot be interrupted: it is judged once it returns.
    if (ms > deadlineMs) throw new HangFinding(`${target.name}: took ${Math.round(ms)} ms, over ${deadlineMs} ms`);
    return { outcome, ms, ...(knownOpen !== undefined && { knownOpen }) };
  } finally {
    clearTimeout(timer);
    process.off('uncaughtException', onEscape);
    process.off('unhandledRejection', onEscape);
  }
}

export const preview = (b: Uint8Array): string =>
  JSON.stringify(Buffer.from(b.subarray(0, 240)).toString('latin1')) +
  (b.length > 240 ? ` … (${b.length} bytes)` : ` (${b.length} bytes)`);

export async function fuzzTarget(target: FuzzTarget, opts: FuzzOptions): Promise<TargetReport> {
  const seeds = loadCorpus(target.name).map((f) => f.bytes);
  const deadlineMs = opts.deadlineMs ?? DEADLINE_MS;
  await target.setup?.();
  const heap = new HeapSampler();
  const counts = { accepted: 0, refused: 0, slowestMs: 0, calls: 0, retried: 0, failed: false };
  const knownOpen: Record<string, number> = {};
  const t0 = performance.now();
  const property = fc.asyncProperty(targetInputs(seeds, target), async (input) => {
    if (++counts.calls % 256 === 0) {
      await turnEventLoop();
      heap.sample();
    }
    if (opts.onProgress && !counts.failed && counts.calls % (opts.progressEvery ?? 10_000) === 0)
      opts.onProgress(counts.calls, (performance.now() - t0) / 1000);
    try {
      const {
        outcome,
        ms,
        knownOpen: known,
      } = await checkOnce(target, input, deadlineMs).catch(async (e: unknown) => {
        // Over the deadline once: run it again before calling it a hang, since on a loaded machine (other test
        // runs, two cores) a 100 ms unpack can wait a second for the CPU. A hang is over the deadline twice.
        if (!(e instanceof HangFinding)) throw e;
        counts.retried++;
        return checkOnce(target, input, deadlineMs);
      });
      if (!counts.failed) {
        counts[outcome]++;
        if (known !== undefined) knownOpen[known] = (knownOpen[known] ?? 0) + 1;
        counts.slowestMs = Math.max(counts.slowestMs, ms);
      }
    } catch (e) {
      counts.failed = true; // what follows is fast-check shrinking, not new inputs
      throw e;
    }
  });
  let result: fc.RunDetails<[Uint8Array]>;
  try {
    result = await fc.check(property, {
      numRuns: opts.runs,
      seed: opts.seed,
      ...(opts.path !== undefined && { path: opts.path }),
    });
  } finally {
    await target.teardown?.();
  }
  const seconds = (performance.now() - t0) / 1000;
  const report: TargetReport = {
    target: target.name,
    parses: target.parses,
    runs: opts.runs,
    inputs: result.numRuns,
    accepted: counts.accepted,
    refused: counts.refused,
    uncaught: 0,
    overDeadline: 0,
    slowestMs: Math.round(counts.slowestMs * 10) / 10,
    retriedOverDeadline: counts.retried,
    knownOpen,
    seconds: Math.round(seconds * 100) / 100,
    heap: await heap.finish(),
    seed: opts.seed,
  };
  if (result.failed && result.counterexample) {
    const [input] = result.counterexample;
    const err = result.errorInstance as Error;
    const kind = err instanceof HangFinding ? 'hang' : err instanceof ContractViolation ? 'contract' : 'uncaught';
    if (kind === 'hang') report.overDeadline = 1;
    else report.uncaught = 1;
    report.finding = {
      kind,
      message: `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`,
      ...(err?.stack !== undefined && { stack: err.stack }),
      seed: result.seed,
      path: result.counterexamplePath ?? '',
      preview: preview(input),
      ...(opts.findingsDir !== undefined && { file: saveFinding(opts.findingsDir, target.name, input) }),
    };
  }
  return report;
}
