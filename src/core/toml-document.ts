// TOML text → schema-validated value (valibot, through valid.ts), with every problem turned into a Diagnostic that names file, TOML path and line.
import { parse, TomlError } from 'smol-toml';
import { CODES, type Diagnostic, type ErrorCode } from './errors.js';
import { KS_CODE } from './schema-rules.js';
import type * as v from 'valibot';
import { safeParse } from './valid.js';
import { formatTomlPath } from './format-toml-path.js';
import { locateToml, type TomlLocator, type TomlPath } from './toml-locate.js';

export interface ParsedDocument<T> {
  /** The TOML as parsed, before the schema; undefined when the TOML itself is invalid. */
  raw?: unknown;
  /** The schema's output; only meaningful when `diagnostics` is empty. */
  value?: T;
  diagnostics: Diagnostic[];
  /** Builds a diagnostic for this file, locating the path's line. */
  diagnostic(code: ErrorCode, path: TomlPath, message: string, hint?: string): Diagnostic;
}

export type MissingFieldOverride = (path: TomlPath) => { code: ErrorCode; message: string; hint?: string } | undefined;

export function parseTomlDocument<S extends v.GenericSchema>(
  file: string,
  text: string,
  schema: S,
  missingOverride?: MissingFieldOverride,
): ParsedDocument<v.InferOutput<S>> {
  let locator: TomlLocator | undefined;
  const diagnostic = (code: ErrorCode, path: TomlPath, message: string, hint?: string): Diagnostic => {
    locator ??= locateToml(text);
    const line = locator.line(path);
    return {
      code,
      message,
      file,
      path: formatTomlPath(path),
      ...(line !== undefined && { line }),
      ...(hint && { hint }),
    };
  };
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (e) {
    const err = e as TomlError;
    const message = (err.message ?? String(e)).split('\n')[0] ?? 'invalid TOML';
    return {
      diagnostics: [
        {
          code: CODES.TOML_SYNTAX,
          message: `invalid TOML: ${message.replace(/^Invalid TOML document: /, '')}`,
          file,
          path: '',
          ...(err instanceof TomlError && { line: err.line, column: err.column }),
        },
      ],
      diagnostic,
    };
  }
  const result = safeParse(schema, raw);
  if (result.success) return { raw, value: result.data, diagnostics: [], diagnostic };
  const diagnostics: Diagnostic[] = [];
  for (const iss of result.issues) {
    const path = iss.path;
    switch (iss.code) {
      case 'unrecognized_keys':
        for (const key of iss.keys!) {
          const known = knownKeys(schema, path);
          const near = closest(key, known);
          diagnostics.push(
            diagnostic(
              CODES.UNKNOWN_KEY,
              [...path, key],
              `unknown key "${key}"`,
              near ? `did you mean "${near}"?` : known.length ? `known keys: ${known.join(', ')}` : undefined,
            ),
          );
        }
        break;
      case 'invalid_type': {
        const value = valueAt(raw, path);
        if (value === undefined) {
          const o = missingOverride?.(path);
          diagnostics.push(
            o
              ? diagnostic(o.code, path, o.message, o.hint)
              : diagnostic(CODES.MISSING_FIELD, path, `missing required key "${String(path[path.length - 1])}"`),
          );
        } else
          diagnostics.push(
            diagnostic(CODES.INVALID_TYPE, path, `expected ${typeName(iss.expected!)}, got ${describe(value)}`),
          );
        break;
      }
      case 'invalid_value':
        diagnostics.push(
          diagnostic(
            CODES.INVALID_VALUE,
            path,
            `${describe(valueAt(raw, path))} is not allowed`,
            `one of ${iss.values!.map((v) => JSON.stringify(v)).join(', ')}`,
          ),
        );
        break;
      case 'too_small':
        diagnostics.push(
          diagnostic(
            CODES.INVALID_VALUE,
            path,
            iss.origin === 'string'
              ? 'must not be empty'
              : `must be at least ${String(iss.minimum)}, got ${describe(valueAt(raw, path))}`,
          ),
        );
        break;
      case 'too_big':
        diagnostics.push(
          diagnostic(
            CODES.INVALID_VALUE,
            path,
            `must be at most ${String(iss.maximum)}, got ${describe(valueAt(raw, path))}`,
          ),
        );
        break;
      case 'custom': {
        const params = (iss.params ?? {}) as Record<string, unknown>;
        diagnostics.push(
          diagnostic(
            (params[KS_CODE] as ErrorCode) ?? CODES.INVALID_VALUE,
            path,
            iss.message,
            params.hint as string | undefined,
          ),
        );
        break;
      }
      default:
        diagnostics.push(diagnostic(CODES.INVALID_VALUE, path, `${describe(valueAt(raw, path))}: ${iss.message}`));
    }
  }
  return { raw, diagnostics, diagnostic };
}

function valueAt(raw: unknown, path: TomlPath): unknown {
  let v = raw;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

function typeName(zodType: string): string {
  return (
    (
      {
        string: 'a string',
        number: 'a number',
        int: 'an integer',
        boolean: 'a boolean',
        array: 'an array',
        object: 'a table',
        record: 'a table',
      } as Record<string, string>
    )[zodType] ?? zodType
  );
}

/** Describes a TOML value in TOML's own words: `integer 8080`, `table`, `string "x"`. */
export function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer ${v}` : `float ${v}`;
  if (typeof v === 'bigint') return `integer ${v}`;
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (Array.isArray(v)) return 'an array';
  // smol-toml's TomlDate spells itself (a local date stays a date): its own toISOString, not core/iso-time.ts.
  if (v instanceof Date) return `datetime ${v.toISOString()}`;
  return 'a table';
}

/** The keys a strict object schema accepts at a path, for "did you mean" hints. Walks valibot's schema objects. */
function knownKeys(schema: v.GenericSchema, path: TomlPath): string[] {
  type Node =
    | { type?: string; wrapped?: Node; getter?: (x: unknown) => Node; item?: Node; entries?: Record<string, Node> }
    | undefined;
  let node = schema as Node;
  const unwrap = () => {
    for (let i = 0; i < 10 && node; i++) {
      if (
        node.type === 'optional' ||
        node.type === 'nullable' ||
        node.type === 'exact_optional' ||
        node.type === 'nullish'
      )
        node = node.wrapped;
      else if (node.type === 'lazy') node = node.getter!(undefined);
      else return;
    }
  };
  const isTable = (n: Node) => n?.type === 'object' || n?.type === 'strict_object' || n?.type === 'loose_object';
  for (const seg of path) {
    unwrap();
    if (node?.type === 'array' && typeof seg === 'number') node = node.item;
    else if (isTable(node) && typeof seg === 'string')
      node = Object.hasOwn(node!.entries!, seg) ? node!.entries![seg] : undefined;
    else return [];
  }
  unwrap();
  return isTable(node) ? Object.keys(node!.entries!) : [];
}

function closest(key: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = editDistance(key, k);
    if (d < bestD) [best, bestD] = [k, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}
