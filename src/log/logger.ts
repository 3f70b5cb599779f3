// pino for the agent: JSON lines by default, the human form of SPEC §11 on a terminal.
import pino, { type Logger } from 'pino';
import { isoTime } from '../core/iso-time.js';
import { cutLine } from '../core/line-bound.js';

export type { Logger } from 'pino';

export interface LogOptions {
  /** Human form (`[agent] reconcile plan …`) instead of JSON lines. */
  pretty: boolean;
  level?: string;
  write?: (line: string) => void;
  /** Applied to every line before it is written: the agent's secret values become `[secret]` (secrets/secret-vault.ts). */
  scrub?: (line: string) => string;
  /** Whether there is anything to scrub (the fields of a line are walked only then); default: always. */
  scrubbing?: () => boolean;
}

/** One logger for the process; modules take `logger.child({ module: 'supervisor' })`. */
export function createLogger(opts: LogOptions): Logger {
  const raw = opts.write ?? ((line: string) => process.stdout.write(line));
  const scrub = opts.scrub;
  const scrubbing = opts.scrubbing ?? (() => true);
  const write = scrub ? (line: string) => raw(scrub(line)) : raw;
  const destination = { write: opts.pretty ? (line: string) => write(humanLine(line)) : write };
  return pino(
    {
      level: opts.level ?? 'info',
      base: undefined,
      // pino's isoTime formatted through Date, which loads the time zone for good (core/iso-time.ts says why not).
      timestamp: () => `,"time":"${isoTime(Date.now())}"`,
      // The last guard of "no line past the bound": a reason quoting a component's output is cut where it is made,
      // but a log line must never carry megabytes whoever forgot to.
      // Secrets are scrubbed from each field before it is serialised (a value a component printed JSON-escaped would be
      // escaped again in the line, past a scrub of the line), and from the line as written (what a serialiser added).
      formatters: { log: scrub ? (obj) => boundFields(scrubbing() ? scrubFields(obj, scrub) : obj) : boundFields },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((a: unknown) => (typeof a === 'string' ? cutLine(scrub ? scrub(a) : a) : a)) as Parameters<
              typeof method
            >,
          );
        },
      },
    },
    destination,
  );
}

/** `obj` with every string in it (nested tables, arrays, an error's message and stack) passed through `scrub`. */
function scrubFields(obj: Record<string, unknown>, scrub: (text: string) => string): Record<string, unknown> {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return scrub(v);
    if (v === null || typeof v !== 'object' || depth > 4) return v;
    if (v instanceof Error)
      return {
        type: v.name,
        message: scrub(v.message),
        ...(v.stack !== undefined && { stack: scrub(v.stack) }),
        ...((v as { code?: unknown }).code !== undefined && { code: (v as { code?: unknown }).code }),
      };
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x, depth + 1);
    return out;
  };
  return walk(obj, 0) as Record<string, unknown>;
}

/** The object of a log line with every string field held to one line's bound. */
function boundFields(obj: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(obj)) {
    if (typeof v !== 'string') continue;
    const cut = cutLine(v);
    if (cut !== v) (out ??= { ...obj })[k] = cut;
  }
  return out ?? obj;
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: '', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const HIDDEN = new Set(['level', 'time', 'module', 'msg', 'pid', 'hostname']);

function value(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(value).join(' ')}]`;
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/**
 * `[module] key=value … msg=text` for lines about a component or layer, `[module] text key=value …`
 * for headlines, as in the worked example.
 */
export function humanLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const level = LEVELS[rec.level as number] ?? '';
  const fields = Object.entries(rec)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined)
    .map(([k, v]) =>
      k === 'err' && v && typeof v === 'object'
        ? `err=${JSON.stringify((v as { message?: string }).message ?? v)}`
        : `${k}=${value(v)}`,
    );
  const msg = typeof rec.msg === 'string' && rec.msg !== '' ? rec.msg : undefined;
  const aboutOne = 'component' in rec || 'layer' in rec;
  const parts = aboutOne ? [...fields, ...(msg ? [`msg=${msg}`] : [])] : [...(msg ? [msg] : []), ...fields];
  return `${level ? `${level} ` : ''}[${rec.module ?? 'agent'}] ${parts.join(' ')}\n`;
}
