// Keystone's schema toolkit over valibot (issue 31: zod's code and schema objects were ~2.4 MiB of the agent's
// resident memory). valibot's modular functions and plain-object schemas are used as they are, except where its
// behaviour differs from what Keystone's messages, paths and parsed values were built on:
//   - tables (`object`, `strictObject`, `looseObject`): an array is not a table; every schema key is parsed from
//     `input[key]` (a missing required key is the key's own "expected X" issue); all unknown keys of a strict table are
//     one issue naming them, after the table's own; `__proto__` is neither read nor copied.
//   - `record`: only a plain object (not an array nor a Date); own enumerable keys in order, "constructor" included.
//   - `number`: finite only; `int()`: an integer, which stops the checks after it when it is not one.
//   - `minLength`/`maxLength`: as zod's, checked on anything with a length even when its type was wrong.
//   - `refine`: a check that adds any number of issues, each with a Keystone code and hint (`params`), at sub-paths.
// `safeParse` returns issues in one flat form (path of keys, code, message) that the formatters read.
import * as v from 'valibot';
import { DEFAULT_MESSAGE, describeIssues, flatIssue, type PathItem, type SafeParseResult } from './valid-issues.js';
import {
  isObject,
  isPlainObject,
  prefix,
  pushIssue,
  run,
  typeIssue,
  type AnySchema,
  type Config,
  type Dataset,
} from './valid-dataset.js';
import { objectRun } from './object-run.js';

export type { Issue, SafeParseResult } from './valid-issues.js';
export { describeIssues } from './valid-issues.js';

const PARSE_CONFIG: Config = { message: () => DEFAULT_MESSAGE };

/** A table that drops keys it does not know. */
export function object<const E extends v.ObjectEntries>(entries: E): v.ObjectSchema<E, undefined> {
  return Object.assign(v.object(entries), { '~run': objectRun('strip') });
}

/** A table that refuses keys it does not know (one issue naming all of them). */
export function strictObject<const E extends v.ObjectEntries>(entries: E): v.StrictObjectSchema<E, undefined> {
  return Object.assign(v.strictObject(entries), { '~run': objectRun('strict') });
}

/** A table that keeps keys it does not know, as they are. */
export function looseObject<const E extends v.ObjectEntries>(entries: E): v.LooseObjectSchema<E, undefined> {
  return Object.assign(v.looseObject(entries), { '~run': objectRun('loose') });
}

/** A plain object whose own keys and values each pass their schema; the keys keep their order. */
export function record<K extends v.GenericSchema<string, string | number | symbol>, T extends AnySchema>(
  key: K,
  value: T,
): v.RecordSchema<K, T, undefined> {
  const base = v.record(key, value);
  return Object.assign(base, {
    '~run'(this: typeof base, dataset: Dataset, config: Config): Dataset {
      const input = dataset.value;
      if (!isPlainObject(input)) return typeIssue(this, dataset, config);
      const out: Record<string, unknown> = {};
      dataset.typed = true;
      for (const k of Object.keys(input)) {
        // `__proto__` is refused, not dropped: a selector `{ __proto__ = "prod" }` read as `{}` would take every device.
        const kr: Dataset = k === '__proto__' ? { value: k, issues: [] } : run(this.key, k, config);
        if (kr.issues) {
          pushIssue(
            dataset,
            {
              kind: 'schema',
              type: 'invalid_key',
              input: k,
              expected: null,
              received: k,
              message: DEFAULT_MESSAGE,
              path: [{ type: 'object', origin: 'key', input, key: k, value: input[k] }],
            },
            config,
          );
          dataset.typed = false;
          continue;
        }
        const r = run(this.value, input[k], config);
        if (r.issues) prefix(r.issues, { type: 'object', origin: 'value', input, key: k, value: input[k] }, dataset);
        if (!r.typed) dataset.typed = false;
        out[kr.value as string] = r.value;
      }
      dataset.value = out;
      return dataset;
    },
  });
}

/** A discriminated union (zod's `discriminatedUnion`): an array is not an object here either. */
export function variant<const K extends string, const O extends v.VariantOptions<K>>(
  key: K,
  options: O,
): v.VariantSchema<K, O, undefined> {
  const base = v.variant(key, options);
  const runVariant = (base as unknown as { '~run': (d: Dataset, c: Config) => Dataset })['~run'].bind(base);
  return Object.assign(base, {
    '~run'(this: typeof base, dataset: Dataset, config: Config): Dataset {
      return Array.isArray(dataset.value) ? typeIssue(this, dataset, config) : runVariant(dataset, config);
    },
  });
}

/** A finite number (not NaN, not ±Infinity). */
export function number(): v.NumberSchema<undefined> {
  const base = v.number();
  return Object.assign(base, {
    '~run'(this: typeof base, dataset: Dataset, config: Config): Dataset {
      if (typeof dataset.value === 'number' && Number.isFinite(dataset.value)) {
        dataset.typed = true;
        return dataset;
      }
      return typeIssue(this, dataset, config);
    },
  });
}

/** `.int()` of a number: a safe integer; when it is not, the checks after it do not run (nor the table's). */
export function int(): v.IntegerAction<number, undefined> {
  const base = v.integer();
  return Object.assign(base, {
    '~run'(this: typeof base, dataset: Dataset, config: Config): Dataset {
      if (!dataset.typed) return dataset;
      const n = dataset.value as number;
      if (!Number.isInteger(n)) {
        pushIssue(
          dataset,
          {
            kind: 'validation',
            type: 'integer',
            input: n,
            expected: 'int',
            received: String(n),
            message: DEFAULT_MESSAGE,
          },
          config,
        );
        dataset.typed = false;
      } else if (!Number.isSafeInteger(n)) {
        // As zod: out of the safe range is a bound's issue, after which the other checks still run.
        const big = n > 0;
        pushIssue(
          dataset,
          {
            kind: 'validation',
            type: big ? 'max_value' : 'min_value',
            origin: 'int',
            input: n,
            expected: null,
            received: String(n),
            requirement: big ? Number.MAX_SAFE_INTEGER : Number.MIN_SAFE_INTEGER,
            message: DEFAULT_MESSAGE,
          },
          config,
        );
      }
      return dataset;
    },
  });
}

function lengthCheck<A extends { type: string; requirement: number; message?: unknown }>(
  action: A,
  fails: (length: number) => boolean,
): A {
  return Object.assign(action, {
    '~run'(dataset: Dataset, config: Config): Dataset {
      const x = dataset.value as { length?: unknown } | null | undefined;
      if (x !== null && x !== undefined && typeof x.length === 'number' && fails(x.length))
        pushIssue(
          dataset,
          {
            kind: 'validation',
            type: action.type,
            input: x,
            expected: null,
            received: String(x.length),
            requirement: action.requirement,
            message: typeof action.message === 'string' ? action.message : DEFAULT_MESSAGE,
          },
          config,
        );
      return dataset;
    },
  });
}

/** zod's `.min(n)` of a string or an array: run on whatever has a length, even when its type was wrong (as zod does). */
export const minLength = <T extends string | unknown[]>(n: number) =>
  lengthCheck(v.minLength<T, number>(n), (l) => l < n);
/** zod's `.max(n)` of a string or an array, the same way. */
export const maxLength = <T extends string | unknown[]>(n: number) =>
  lengthCheck(v.maxLength<T, number>(n), (l) => l > n);

/** zod's `z.int()`: a finite number that is a safe integer. */
export const integer = () => v.pipe(number(), int());

/** What a refinement is given to report with: zod's ctx, as far as Keystone used it. */
export interface RefinementCtx {
  addIssue(issue: {
    code?: 'custom';
    message: string;
    path?: (string | number)[];
    params?: Record<string, unknown>;
  }): void;
}

/** A check that may add several issues, each with params (a Keystone code, a hint) and a path below the value. */
export function refine<T>(fn: (value: T, ctx: RefinementCtx) => void): v.CheckAction<T, undefined> {
  const base = v.check<T>(() => true);
  return Object.assign(base, {
    '~run'(dataset: Dataset, config: Config): Dataset {
      if (!dataset.typed) return dataset;
      const input = dataset.value;
      fn(input as T, {
        addIssue(i) {
          let path: PathItem[] | undefined;
          let at = input;
          for (const key of i.path ?? []) {
            const value = isObject(at) || Array.isArray(at) ? (at as Record<string | number, unknown>)[key] : undefined;
            (path ??= []).push({ type: 'unknown', origin: 'value', input: at, key, value });
            at = value;
          }
          pushIssue(
            dataset,
            {
              kind: 'validation',
              type: 'custom',
              input,
              expected: null,
              received: 'input',
              message: i.message,
              params: i.params,
              path,
            },
            config,
          );
        },
      });
      return dataset;
    },
  });
}

/** zod's `.refine(ok, message)`. */
export const check = <T>(ok: (value: T) => boolean, message: string) =>
  refine<T>((value, ctx) => {
    if (!ok(value)) ctx.addIssue({ message });
  });

/** Runs a schema: its value, or its issues in Keystone's flat form. */
export function safeParse<S extends AnySchema>(schema: S, value: unknown): SafeParseResult<v.InferOutput<S>> {
  const r = run(schema, value, PARSE_CONFIG);
  if (!r.issues) return { success: true, data: r.value as v.InferOutput<S> };
  return { success: false, issues: r.issues.map(flatIssue) };
}

/** Runs a schema and throws on failure (zod's `.parse`), the error naming the issues. */
export function parse<S extends AnySchema>(schema: S, value: unknown): v.InferOutput<S> {
  const r = safeParse(schema, value);
  if (r.success) return r.data;
  throw new Error(describeIssues(r.issues));
}
