// `{{config.http.port}}` and `{{deps.api.exports.port}}` in recipe strings (SPEC §12): parsed, then resolved per unit.

export type TemplateRef = { kind: 'config'; path: string[] } | { kind: 'bind'; dep: string; key: string };

export interface Placeholder {
  /** As written between the braces, trimmed: the key of a unit's recorded inputs (`config.http.port`). */
  text: string;
  ref: TemplateRef;
}

const CONFIG_REF = /^config((?:\.[A-Za-z0-9_-]+)+)$/;
const BIND_REF = /^deps\.([A-Za-z0-9][A-Za-z0-9._-]*)\.exports\.([A-Za-z0-9_-]+)$/;

/**
 * Only `{{config.…}}` and `{{deps.…}}` are placeholders (text that opens with `{{config.` or `{{deps.`): any other braces are the recipe's own text (a JSON value in an
 * env var, a Go template in a container command such as `{{.ID}}`), left as written, as before placeholders existed.
 */
const OPENING = /\{\{\s*(?:config|deps)\./g;
const PLACEHOLDER = /\{\{\s*((?:config|deps)\.[^{}]*?)\s*\}\}/g;

/** Every placeholder of `text`, or why one cannot be read. Text without one is returned as is, at no cost. */
export function parseTemplate(text: string): { placeholders: Placeholder[]; error?: string } {
  const placeholders: Placeholder[] = [];
  if (!text.includes('{{')) return { placeholders };
  for (const m of text.matchAll(OPENING)) {
    const close = text.indexOf('}}', m.index);
    const nextOpen = text.indexOf('{{', m.index + 2);
    if (close < 0 || (nextOpen >= 0 && nextOpen < close)) return { placeholders, error: `"{{" without "}}" in "${text}"` };
    const inner = text.slice(m.index + 2, close).trim();
    const ref = parseRef(inner);
    if (!ref) return { placeholders, error: `{{${inner}}} is neither {{config.KEY}} nor {{deps.NAME.exports.KEY}}` };
    placeholders.push({ text: inner, ref });
  }
  return { placeholders };
}

function parseRef(inner: string): TemplateRef | undefined {
  const c = CONFIG_REF.exec(inner);
  if (c) return { kind: 'config', path: c[1]!.slice(1).split('.') };
  const b = BIND_REF.exec(inner);
  if (b) return { kind: 'bind', dep: b[1]!, key: b[2]! };
  return undefined;
}

/** Replaces each placeholder with `value(placeholder)`; assumes `text` parsed without error. */
export function interpolate(text: string, value: (p: Placeholder) => string): string {
  if (!text.includes('{{')) return text;
  return text.replace(PLACEHOLDER, (_m, inner: string) => {
    const trimmed = inner.trim();
    return value({ text: trimmed, ref: parseRef(trimmed)! });
  });
}

/** True when `text` has a placeholder (well formed or not). */
export function hasPlaceholder(text: string): boolean {
  return text.includes('{{') && /\{\{\s*(?:config|deps)\./.test(text);
}

/**
 * Calls `fn` on every string in `value` with its path (object keys and array indices), rebuilding only what changes.
 * Parsed recipes use the TOML keys unchanged, so the path is also the string's TOML path.
 */
export function mapStrings<T>(value: T, path: readonly (string | number)[], fn: (text: string, path: (string | number)[]) => string): T {
  if (typeof value === 'string') return fn(value, [...path]) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v, i) => {
      const m = mapStrings(v, [...path, i], fn);
      if (m !== v) changed = true;
      return m;
    });
    return (changed ? out : value) as T;
  }
  if (value !== null && typeof value === 'object') {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const m = mapStrings(v, [...path, k], fn);
      if (m !== v) changed = true;
      out[k] = m;
    }
    return (changed ? out : value) as T;
  }
  return value;
}
