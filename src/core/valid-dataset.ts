// The plumbing valid.ts's schemas run on: valibot's dataset and config, running a schema, and adding an issue in the
// shape valibot's own issues have. Apart from valid.ts so the table run (object-run.ts) shares it without a circle.
import type * as v from 'valibot';
import { DEFAULT_MESSAGE, type PathItem, type RawIssue } from './valid-issues.js';

export type AnySchema = v.GenericSchema;
export type Dataset = { typed?: boolean; value: unknown; issues?: RawIssue[] };
export type Config = v.Config<v.BaseIssue<unknown>>;

export const run = (schema: AnySchema, value: unknown, config: Config): Dataset =>
  (schema as unknown as { '~run': (d: Dataset, c: Config) => Dataset })['~run']({ value }, config);

export function pushIssue(dataset: Dataset, issue: Record<string, unknown>, config: Config): void {
  const full = {
    lang: config.lang,
    abortEarly: config.abortEarly,
    abortPipeEarly: config.abortPipeEarly,
    requirement: undefined,
    path: undefined,
    issues: undefined,
    ...issue,
  } as RawIssue;
  (dataset.issues ??= []).push(full);
}

export function typeIssue(
  schema: { kind: string; type: string; expects: string | null; message?: unknown },
  dataset: Dataset,
  config: Config,
): Dataset {
  pushIssue(
    dataset,
    {
      kind: 'schema',
      type: schema.type,
      input: dataset.value,
      expected: schema.expects,
      received: String(typeof dataset.value),
      message: typeof schema.message === 'string' ? schema.message : DEFAULT_MESSAGE,
    },
    config,
  );
  dataset.typed = false;
  return dataset;
}

export function prefix(issues: RawIssue[], item: PathItem, into: Dataset): void {
  for (const issue of issues) {
    const path = issue.path as PathItem[] | undefined;
    if (path) path.unshift(item);
    else (issue as { path?: PathItem[] }).path = [item];
    (into.issues ??= []).push(issue);
  }
}

/** An object that is not an array nor a date (a TOML datetime is a Date): what a TOML table is. */
export const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof Date);

export function isPlainObject(o: unknown): o is Record<string, unknown> {
  if (!isObject(o)) return false;
  const ctor = (o as { constructor?: unknown }).constructor;
  if (ctor === undefined || typeof ctor !== 'function') return true;
  const prot = (ctor as { prototype?: unknown }).prototype;
  return isObject(prot) && Object.prototype.hasOwnProperty.call(prot, 'isPrototypeOf');
}
