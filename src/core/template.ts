// `{{config.http.port}}` and `{{deps.api.exports.port}}` in recipe strings (SPEC §12): parsed, then resolved per unit.
// Values are data (SPEC §6): in shell text each is one quoted word, and in a health check's URL it cannot move the host.
import { shellPlacementProblems, shellQuote } from './shell-word.js';

export type TemplateRef =
  { kind: 'config'; path: string[] } | { kind: 'bind'; dep: string; key: string } | { kind: 'secret'; name: string };

export interface Placeholder {
  /** As written between the braces, trimmed: the key of a unit's recorded inputs (`config.http.port`). */
  text: string;
  ref: TemplateRef;
}

const CONFIG_REF = /^config((?:\.[A-Za-z0-9_-]+)+)$/;
const BIND_REF = /^deps\.([A-Za-z0-9][A-Za-z0-9._-]*)\.exports\.([A-Za-z0-9_-]+)$/;
/** A secret's name (SPEC §16): also its file name, `secrets/NAME.age`. */
export const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const SECRET_REF = /^secret\.(.*)$/;

/**
 * Only `{{config.…}}`, `{{deps.…}}` and `{{secret.…}}` are placeholders (text that opens with `{{config.`, `{{deps.` or
 * `{{secret.`): any other braces are the recipe's own text (a JSON value in an env var, a Go template in a container
 * command such as `{{.ID}}`), left as written, as before placeholders existed.
 */
const OPENING = /\{\{\s*(?:config|deps|secret)\./g;
const PLACEHOLDER = /\{\{\s*((?:config|deps|secret)\.[^{}]*?)\s*\}\}/g;

/** Every placeholder of `text`, or why one cannot be read. Text without one is returned as is, at no cost. */
export function parseTemplate(text: string): { placeholders: Placeholder[]; error?: string } {
  const placeholders: Placeholder[] = [];
  if (!text.includes('{{')) return { placeholders };
  for (const m of text.matchAll(OPENING)) {
    const close = text.indexOf('}}', m.index);
    const nextOpen = text.indexOf('{{', m.index + 2);
    if (close < 0 || (nextOpen >= 0 && nextOpen < close))
      return { placeholders, error: `"{{" without "}}" in "${text}"` };
    const inner = text.slice(m.index + 2, close).trim();
    const ref = parseRef(inner);
    if (!ref)
      return {
        placeholders,
        error: inner.startsWith('secret.')
          ? `{{${inner}}}: a secret's name is letters, digits, "_" and "-" (at most 63), as its file secrets/NAME.age`
          : `{{${inner}}} is neither {{config.KEY}}, {{deps.NAME.exports.KEY}} nor {{secret.NAME}}`,
      };
    placeholders.push({ text: inner, ref });
  }
  return { placeholders };
}

function parseRef(inner: string): TemplateRef | undefined {
  const c = CONFIG_REF.exec(inner);
  if (c) return { kind: 'config', path: c[1]!.slice(1).split('.') };
  const b = BIND_REF.exec(inner);
  if (b) return { kind: 'bind', dep: b[1]!, key: b[2]! };
  const sec = SECRET_REF.exec(inner);
  if (sec && SECRET_NAME.test(sec[1]!)) return { kind: 'secret', name: sec[1]! };
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

/** Where each placeholder of `text` starts and ends (after its `}}`); assumes `text` parsed without error. */
export function placeholderSpans(text: string): { start: number; end: number }[] {
  if (!text.includes('{{')) return [];
  return [...text.matchAll(PLACEHOLDER)].map((m) => ({ start: m.index, end: m.index + m[0].length }));
}

/**
 * How a string's placeholders are substituted, by its TOML path: the install script is sh code; a health check is a
 * URL or (`cmd:`) sh code; everything else (args, env, a container's command: argv arrays) takes values verbatim.
 */
export type PlaceholderContext = 'verbatim' | 'shell' | 'check';

export function placeholderContext(path: readonly (string | number)[]): PlaceholderContext {
  const n = path.length;
  if (n >= 3 && path[n - 3] === 'lifecycle' && path[n - 2] === 'install' && path[n - 1] === 'script') return 'shell';
  if (n >= 2 && path[n - 2] === 'health' && path[n - 1] === 'check') return 'check';
  return 'verbatim';
}

const CMD_CHECK = 'cmd:';

/** Why each placeholder of `text` (parsed without error) cannot stand where it is in its context; [] when all can. */
export function placementProblems(
  text: string,
  context: PlaceholderContext,
): { placeholder: string; why: string; hint: string }[] {
  const spans = placeholderSpans(text);
  if (spans.length === 0 || context === 'verbatim') return [];
  let problems;
  if (context === 'shell') problems = shellPlacementProblems(text, spans);
  else if (text.startsWith(CMD_CHECK))
    problems = shellPlacementProblems(
      text.slice(CMD_CHECK.length),
      spans.map((s) => ({ start: s.start - CMD_CHECK.length, end: s.end - CMD_CHECK.length })),
    ).map((p) => ({ ...p, start: p.start + CMD_CHECK.length, end: p.end + CMD_CHECK.length }));
  else return [];
  return problems.map((p) => ({ placeholder: text.slice(p.start, p.end), why: p.why, hint: p.hint }));
}

/** Characters a value may hold in a health check URL's host or port: no `@ / ? # \`, which would move the host. */
const AUTHORITY_VALUE = /^[A-Za-z0-9._:[\]-]*$/;

/**
 * `text` with each placeholder replaced by `value(placeholder)` as its context wants: a single-quoted word in sh code
 * (install script, `cmd:` check), verbatim elsewhere. In a URL check a value in the host or port that could change
 * the host is an error. Assumes `text` parsed without error and, for a check, starts with its literal scheme.
 */
export function substitute(
  text: string,
  context: PlaceholderContext,
  value: (p: Placeholder) => string,
): { text: string } | { error: string } {
  if (context === 'verbatim') return { text: interpolate(text, value) };
  if (context === 'shell' || text.startsWith(CMD_CHECK))
    return { text: interpolate(text, (p) => shellQuote(value(p))) };
  const authorityEnd = urlAuthorityEnd(text);
  let error: string | undefined;
  const out = text.replace(PLACEHOLDER, (m, inner: string, offset: number) => {
    const trimmed = inner.trim();
    const v = value({ text: trimmed, ref: parseRef(trimmed)! });
    if (offset < authorityEnd && !AUTHORITY_VALUE.test(v))
      error ??= `{{${trimmed}}} is ${JSON.stringify(v)}: in a health check's host or port a value may hold only letters, digits and . _ : [ ] -, so that it cannot change the host`;
    return v;
  });
  return error !== undefined ? { error } : { text: out };
}

/** Where the host and port of `scheme://…` end: at the first literal `/ ? # \\` after `://` (values cannot reopen them). */
function urlAuthorityEnd(text: string): number {
  const starts = new Map(placeholderSpans(text).map((s) => [s.start, s.end]));
  let i = text.indexOf('://');
  if (i < 0) return text.length;
  i += 3;
  while (i < text.length) {
    const end = starts.get(i);
    if (end !== undefined) i = end;
    else if ('/?#\\'.includes(text[i]!)) return i;
    else i++;
  }
  return text.length;
}

/** True when `text` has a placeholder (well formed or not). */
export function hasPlaceholder(text: string): boolean {
  return text.includes('{{') && /\{\{\s*(?:config|deps|secret)\./.test(text);
}

/** The names of the `{{secret.NAME}}` placeholders of `text`, in order (empty for text that does not parse). */
export function secretNamesIn(text: string): string[] {
  if (!text.includes('{{')) return [];
  const { placeholders, error } = parseTemplate(text);
  if (error) return [];
  return placeholders.flatMap((p) => (p.ref.kind === 'secret' ? [p.ref.name] : []));
}

/** `{{secret.NAME}}` as the resolved desired state keeps it: the value is put in only where the component starts. */
export function secretPlaceholder(name: string): string {
  return `{{secret.${name}}}`;
}

/** True when some string in `value` (not a key) satisfies `test`; no paths are built. */
export function someString(value: unknown, test: (text: string) => boolean): boolean {
  if (typeof value === 'string') return test(value);
  if (Array.isArray(value)) {
    for (const v of value) if (someString(v, test)) return true;
    return false;
  }
  if (value !== null && typeof value === 'object') {
    for (const k in value)
      if (Object.hasOwn(value, k) && someString((value as Record<string, unknown>)[k], test)) return true;
  }
  return false;
}

/**
 * Calls `fn` on every string in `value` with its path (object keys and array indices), rebuilding only what changes.
 * Parsed recipes use the TOML keys unchanged, so the path is also the string's TOML path.
 */
export function mapStrings<T>(
  value: T,
  path: readonly (string | number)[],
  fn: (text: string, path: (string | number)[]) => string,
): T {
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
