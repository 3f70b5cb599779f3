// Keystone's schema issues (valid.ts): valibot's issues in one flat form (path of keys, code, message) that the
// formatters read, with zod's codes and its English messages where no schema named one, so that every message an
// operator saw before the move to valibot (issue 31) reads the same.
import type * as v from 'valibot';

/** An issue as Keystone's formatters read it: where (keys), what (code and its details), and a message. */
export interface Issue {
  code:
    | 'invalid_type'
    | 'invalid_value'
    | 'too_small'
    | 'too_big'
    | 'invalid_format'
    | 'unrecognized_keys'
    | 'invalid_union'
    | 'invalid_key'
    | 'custom';
  path: (string | number)[];
  message: string;
  input: unknown;
  /** invalid_type: string, number, int, boolean, array, object, record, date, … */
  expected?: string;
  /** invalid_value: the values allowed. */
  values?: unknown[];
  /** too_small / too_big: string, array, number. */
  origin?: string;
  minimum?: number;
  maximum?: number;
  inclusive?: boolean;
  /** unrecognized_keys */
  keys?: string[];
  /** invalid_format */
  format?: string;
  pattern?: RegExp;
  /** invalid_union of a discriminated union: the discriminator's values. */
  options?: unknown[];
  /** custom: what `refine`'s ctx.addIssue was given. */
  params?: Record<string, unknown>;
}

export type SafeParseResult<T> = { success: true; data: T } | { success: false; issues: Issue[] };

export type RawIssue = v.BaseIssue<unknown> & Record<string, unknown>;
export type PathItem = { type: string; origin: 'value' | 'key'; input: unknown; key: unknown; value: unknown };

/** The message valibot gives an issue that no schema named one for: replaced by zod's words in `safeParse`. */
export const DEFAULT_MESSAGE = '\u0000default';
/** `path: message; …`, the path `value` when it is empty. */
export function describeIssues(issues: Issue[], empty = 'value'): string {
  return issues.map((i) => `${i.path.length ? i.path.join('.') : empty}: ${i.message}`).join('; ');
}

export function flatIssue(raw: RawIssue): Issue {
  const path = ((raw.path as PathItem[] | undefined) ?? []).map((p) => p.key as string | number);
  const input = raw.input;
  const base = { path, input, message: raw.message };
  let issue: Issue;
  switch (raw.type) {
    case 'custom':
      issue = {
        ...base,
        code: 'custom',
        ...(raw.params !== undefined && { params: raw.params as Record<string, unknown> }),
      };
      break;
    case 'unrecognized_keys':
      issue = { ...base, code: 'unrecognized_keys', keys: raw.keys as string[] };
      break;
    case 'invalid_key':
      issue = { ...base, code: 'invalid_key', origin: 'record' };
      break;
    case 'integer':
      issue = { ...base, code: 'invalid_type', expected: 'int' };
      break;
    case 'picklist':
    case 'literal':
      issue = {
        ...base,
        code: 'invalid_value',
        values: (raw.expected as string)
          .replace(/^\((.*)\)$/, '$1')
          .split(' | ')
          .map((s) => JSON.parse(s) as unknown),
      };
      break;
    case 'variant':
      issue =
        raw.expected === 'Object'
          ? { ...base, code: 'invalid_type', expected: 'object' }
          : {
              ...base,
              code: 'invalid_union',
              options: (raw.expected as string)
                .replace(/^\((.*)\)$/, '$1')
                .split(' | ')
                .map((o) => JSON.parse(o) as unknown),
            };
      break;
    case 'union':
      issue = { ...base, code: 'invalid_union' };
      break;
    case 'min_length':
    case 'min_value':
    case 'gt_value':
      issue = {
        ...base,
        code: 'too_small',
        origin: (raw.origin as string | undefined) ?? originOf(raw.type, input),
        minimum: raw.requirement as number,
        inclusive: raw.type !== 'gt_value',
      };
      break;
    case 'max_length':
    case 'max_value':
    case 'lt_value':
      issue = {
        ...base,
        code: 'too_big',
        origin: (raw.origin as string | undefined) ?? originOf(raw.type, input),
        maximum: raw.requirement as number,
        inclusive: raw.type !== 'lt_value',
      };
      break;
    case 'regex':
      issue = { ...base, code: 'invalid_format', format: 'regex', pattern: raw.requirement as RegExp };
      break;
    case 'base64':
      issue = { ...base, code: 'invalid_format', format: 'base64' };
      break;
    default:
      issue = { ...base, code: 'invalid_type', expected: EXPECTED[raw.type] ?? raw.type };
  }
  if (issue.message === DEFAULT_MESSAGE) issue.message = zodMessage(issue);
  return issue;
}

const EXPECTED: Record<string, string> = { strict_object: 'object', loose_object: 'object', object: 'object' };

const originOf = (type: string, input: unknown): string =>
  type.endsWith('_length')
    ? typeof input === 'string'
      ? 'string'
      : Array.isArray(input)
        ? 'array'
        : 'unknown'
    : typeof input === 'bigint'
      ? 'bigint'
      : 'number';

/** zod's type name of a value (util.parsedType). */
function parsedType(x: unknown): string {
  if (typeof x === 'number') return Number.isNaN(x) ? 'NaN' : Number.isFinite(x) ? 'number' : String(x);
  if (typeof x !== 'object') return typeof x;
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'array';
  if (x instanceof Date) return 'date';
  if (x instanceof Map) return 'map';
  if (x instanceof Set) return 'set';
  return 'object';
}

const joinValues = (values: unknown[], sep: string) =>
  values.map((x) => (typeof x === 'string' ? `"${x}"` : String(x))).join(sep);

/** zod's English message for an issue that no schema named one for (zod/v4/locales/en.js). */
function zodMessage(i: Issue): string {
  const unit = i.origin === 'string' ? 'characters' : i.origin === 'array' ? 'items' : undefined;
  switch (i.code) {
    case 'invalid_type':
      return `Invalid input: expected ${i.expected}, received ${parsedType(i.input)}`;
    case 'invalid_value':
      return i.values!.length === 1
        ? `Invalid input: expected ${joinValues(i.values!, '')}`
        : `Invalid option: expected one of ${joinValues(i.values!, '|')}`;
    case 'too_big':
      return unit
        ? `Too big: expected ${i.origin} to have ${i.inclusive ? '<=' : '<'}${i.maximum} ${unit}`
        : `Too big: expected ${i.origin} to be ${i.inclusive ? '<=' : '<'}${i.maximum}`;
    case 'too_small':
      return unit
        ? `Too small: expected ${i.origin} to have ${i.inclusive ? '>=' : '>'}${i.minimum} ${unit}`
        : `Too small: expected ${i.origin} to be ${i.inclusive ? '>=' : '>'}${i.minimum}`;
    case 'invalid_format':
      return i.format === 'regex'
        ? `Invalid string: must match pattern ${String(i.pattern)}`
        : i.format === 'base64'
          ? 'Invalid base64-encoded string'
          : `Invalid ${i.format}`;
    case 'unrecognized_keys':
      return `Unrecognized key${i.keys!.length > 1 ? 's' : ''}: ${joinValues(i.keys!, ', ')}`;
    case 'invalid_key':
      return 'Invalid key in record';
    case 'invalid_union':
      return i.options?.length
        ? `Invalid discriminator value. Expected ${i.options.map((o) => `'${String(o)}'`).join(' | ')}`
        : 'Invalid input';
    default:
      return 'Invalid input';
  }
}
