// The run of a table schema (`object`, `strictObject`, `looseObject` in valid.ts): every schema key parsed from
// `input[key]`, the unknown keys of a strict table one issue. Apart from valid.ts, which attaches it to valibot's tables.
import { DEFAULT_MESSAGE } from './valid-issues.js';
import {
  isObject,
  prefix,
  pushIssue,
  run,
  typeIssue,
  type AnySchema,
  type Config,
  type Dataset,
} from './valid-dataset.js';

/** An optional entry with no default: an absent key is left out, whatever it holds. */
const isBareOptional = (s: AnySchema): boolean =>
  (s.type === 'optional' || s.type === 'exact_optional') && (s as { default?: unknown }).default === undefined;

export function objectRun(mode: 'strip' | 'strict' | 'loose') {
  return function (
    this: { entries: Record<string, AnySchema>; type: string; kind: string; expects: string; message?: unknown },
    dataset: Dataset,
    config: Config,
  ): Dataset {
    const input = dataset.value;
    if (!isObject(input)) return typeIssue(this, dataset, config);
    const out: Record<string, unknown> = {};
    dataset.typed = true;
    for (const key in this.entries) {
      if (key === '__proto__') continue;
      const schema = this.entries[key]!;
      const present = key in input;
      if (!present && isBareOptional(schema)) continue;
      const value = input[key];
      const r = run(schema, value, config);
      if (r.issues) prefix(r.issues, { type: 'object', origin: 'value', input, key, value }, dataset);
      if (!r.typed) dataset.typed = false;
      if (r.value === undefined) {
        if (present) out[key] = undefined;
      } else out[key] = r.value;
    }
    if (mode !== 'strip') {
      const unknown: string[] = [];
      for (const key in input) {
        if (Object.prototype.hasOwnProperty.call(this.entries, key)) continue;
        if (mode === 'strict') unknown.push(key);
        else if (key !== '__proto__') out[key] = input[key];
      }
      // Describes the input, not the value: the parse fails, but the table's own checks still run (not a type issue).
      if (unknown.length)
        pushIssue(
          dataset,
          {
            kind: 'validation',
            type: 'unrecognized_keys',
            input,
            expected: null,
            received: unknown.join(', '),
            keys: unknown,
            message: DEFAULT_MESSAGE,
          },
          config,
        );
    }
    dataset.value = out;
    return dataset;
  };
}
