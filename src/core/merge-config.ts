// Configuration tables: defaults with overrides laid on top, and the values placeholders read from them.
import { CODES, type Diagnostic } from './errors.js';
import type { ConfigTable } from './recipe.js';
import type { At, Located } from './resolution-types.js';

export function table(v: unknown): ConfigTable | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as ConfigTable) : undefined;
}

/** `base` with `over` laid on top, key by key; a key the defaults do not have is a typo, refused at `loc`. */
export function mergeConfig(
  base: ConfigTable,
  over: ConfigTable | undefined,
  loc: Located,
  defaultsFile: string,
  diagnostics: Diagnostic[],
  at: At,
): ConfigTable {
  if (!over) return base;
  const out: ConfigTable = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const path = [...loc.path, key];
    if (!Object.hasOwn(base, key)) {
      const known = Object.keys(base);
      diagnostics.push(
        at(
          { ...loc, path },
          CODES.CONFIG_OVERRIDE_UNKNOWN,
          `"${key}" is not a configuration key of ${defaultsFile}`,
          known.length ? `its [config] keys: ${known.join(', ')}` : `${defaultsFile} has no [config]`,
        ),
      );
      continue;
    }
    const b = table(base[key]);
    const o = table(value);
    if (b && o) out[key] = mergeConfig(b, o, { ...loc, path }, defaultsFile, diagnostics, at);
    else if (b || o)
      diagnostics.push(
        at(
          { ...loc, path },
          CODES.INVALID_TYPE,
          `"${key}" is ${b ? 'a table' : 'a value'} in the defaults of ${defaultsFile}, so it must be one here too`,
        ),
      );
    else out[key] = value;
  }
  return out;
}

/** The text of `{{config.a.b}}`, or why it has none. */
export function configValue(config: ConfigTable, path: string[]): { value?: string; error?: 'unknown' | 'table' } {
  let v: unknown = config;
  for (const seg of path) {
    const t = table(v);
    if (!t || !Object.hasOwn(t, seg)) return { error: 'unknown' };
    v = t[seg];
  }
  if (table(v)) return { error: 'table' };
  return { value: String(v) };
}

export function configKeys(config: ConfigTable, prefix = ''): string[] {
  return Object.entries(config).flatMap(([k, v]) =>
    table(v) ? configKeys(table(v)!, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}
