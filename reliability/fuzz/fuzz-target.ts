// What one fuzz target is: a parser of outside input, the inputs to feed it and the oracle that judges each answer.
// Every input is bytes, so that a crash can be kept in the corpus as a file and replayed as it was.
import type fc from 'fast-check';

/** What the parser did with one input, when it kept its contract. */
export type Outcome = 'accepted' | 'refused';

/**
 * A finding in code this harness's author may not change (reported, with its proposed fix, to its owner): counted
 * under its id instead of stopping the run, so that the target keeps fuzzing past it. Removed once fixed.
 */
export interface KnownOpenFinding {
  id: string;
  matches(e: unknown): boolean;
}

export interface FuzzTarget {
  /** Kebab-case, the module's and the corpus folder's name. */
  readonly name: string;
  /** The parser(s) under test and where their input comes from, for the report. */
  readonly parses: string;
  /** Inputs of every generator stay below this many bytes (arbitrary bytes, mutations of seeds). */
  readonly maxBytes: number;
  /** Runs in `npm test` (test/reliability/fuzz.test.ts): async targets that touch the disk take fewer. */
  readonly testRuns: number;
  /**
   * Runs of `npm run fuzz` without --runs, for the targets whose 100,000 inputs would take many minutes (disk, scrypt,
   * HTTP); the others run 100,000. `--runs N` runs N of every target.
   */
  readonly defaultRuns?: number;
  /** Tokens the mutator inserts: keywords and delimiters of the format, to get past its first checks. */
  readonly dictionary?: readonly string[];
  /** Inputs built from the format's grammar (valid documents and near misses). */
  readonly structured?: fc.Arbitrary<Uint8Array>;
  /** Runs the parser on one input and judges the answer: returns within the contract, throws anything else. */
  check(input: Uint8Array): Outcome | Promise<Outcome>;
  /** Findings still open in code outside this harness's reach; see KnownOpenFinding. */
  readonly knownOpen?: readonly KnownOpenFinding[];
  /** A temporary directory, a server: made once before the runs, undone after. */
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
}

/** The parser answered, but outside its contract (a value it must never return, a diagnostic without a code). */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

/** The parser did not answer within the deadline (async), or took longer than it (sync). */
export class HangFinding extends Error {
  override readonly name = 'HangFinding';
}

/** An exception thrown outside the parser's promise (uncaught, or an unhandled rejection) while it ran. */
export class EscapedFinding extends Error {
  override readonly name = 'EscapedFinding';
}

export function holds(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ContractViolation(message);
}

/**
 * The parser threw: 'refused' when it is its own coded error (the `expected` guard), otherwise the exception goes on
 * to the runner as a finding.
 */
export function refusedWith(e: unknown, expected: (e: unknown) => boolean): Outcome {
  if (expected(e)) return 'refused';
  throw e;
}

export const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');
export const text = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'utf8'));
