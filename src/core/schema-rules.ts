// Reusable schema field rules (valibot, through valid.ts) that attach Keystone error codes, so schema failures map to stable codes.
import * as v from 'valibot';
import { int, number, refine, type RefinementCtx } from './valid.js';
import semver from 'semver';
import { parseDuration } from './duration.js';
import { isComponentName } from './component-name.js';
import { CODES, type ErrorCode } from './errors.js';

/** The params key a custom issue uses to carry its Keystone code. */
export const KS_CODE = 'ksCode';

export function issue(ctx: RefinementCtx, code: ErrorCode, message: string, hint?: string): void {
  ctx.addIssue({ code: 'custom', message, params: { [KS_CODE]: code, hint } });
}

/** Timers past this misfire in Node (setTimeout's 2^31 ms limit); no probe or install needs a week. */
export const MAX_DURATION_MS = 7 * 24 * 3_600_000;

// Each rule's test is a plain predicate too, shared with the validators' fast paths (recipe-fast-path.ts), so the
// two cannot drift apart: the fast path accepts exactly what these accept, and leaves anything else to the schema.

/** Milliseconds of a Go-style duration that is more than zero and at most a week; undefined for anything else. */
export function durationInRange(v: string): number | undefined {
  const ms = parseDuration(v);
  return ms === undefined || ms < 1 || ms > MAX_DURATION_MS ? undefined : ms;
}

/** A Go-style duration string, more than zero and at most a week. */
export const durationText = v.pipe(
  v.string(),
  refine<string>((v, ctx) => {
    const ms = parseDuration(v);
    if (ms === undefined)
      issue(ctx, CODES.BAD_DURATION, `"${v}" is not a duration`, 'use Go style: "200ms", "10s", "2m0s", "1h30m"');
    else if (ms < 1 || ms > MAX_DURATION_MS)
      issue(ctx, CODES.BAD_DURATION, `"${v}" is out of range`, 'between 1ms and 168h');
  }),
);

/** Strict: the text must be exactly a version (build metadata allowed), not a loose "v1.2.3" or " 1.2.3". */
export function isSemverText(v: string): boolean {
  const p = semver.parse(v);
  return !!p && `${p.version}${p.build.length ? `+${p.build.join('.')}` : ''}` === v;
}

export const semverText = v.pipe(
  v.string(),
  refine<string>((v, ctx) => {
    if (!isSemverText(v))
      issue(ctx, CODES.BAD_SEMVER, `"${v}" is not a semantic version`, 'e.g. "2.7.5" or "1.0.0-rc.1"');
  }),
);

/** Range texts already judged, by text: a revision repeats a handful of ranges thousands of times. Bounded. */
const rangeVerdicts = new Map<string, boolean>();

export function isSemverRangeText(v: string): boolean {
  let ok = rangeVerdicts.get(v);
  if (ok === undefined) {
    ok = v.trim() !== '' && semver.validRange(v) !== null;
    if (rangeVerdicts.size >= 4096) rangeVerdicts.clear();
    rangeVerdicts.set(v, ok);
  }
  return ok;
}

export const semverRangeText = v.pipe(
  v.string(),
  refine<string>((v, ctx) => {
    if (!isSemverRangeText(v))
      issue(ctx, CODES.BAD_SEMVER_RANGE, `"${v}" is not a semver range`, 'e.g. ">=2.7.0", "^1.4", "1.x"');
  }),
);

const REVERSE_DNS = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9_-]*[a-z0-9])?)+$/i;
export const isReverseDnsName = (v: string): boolean => REVERSE_DNS.test(v) && v.length <= 253;

/** Reverse-DNS identity such as com.acme.influxdb: at least two dot-separated labels. */
export const reverseDnsName = v.pipe(
  v.string(),
  refine<string>((v, ctx) => {
    if (!isReverseDnsName(v))
      issue(ctx, CODES.BAD_NAME, `"${v}" is not a reverse-DNS name`, 'e.g. "com.acme.influxdb"');
  }),
);

export { isComponentName };

/** A component's name on a device: used in URLs (`/v1/components/{name}:restart`), file names and logs, so kept plain. `/` is reserved for composite members. */
export const componentName = v.pipe(
  v.string(),
  refine<string>((v, ctx) => {
    if (!isComponentName(v))
      issue(
        ctx,
        CODES.BAD_NAME,
        `"${v}" is not a valid component name`,
        'letters, digits, ".", "_" and "-", starting with a letter or digit, at most 63 characters',
      );
  }),
);

export const portNumber = v.pipe(number(), int(), v.minValue(1), v.maxValue(65535));
export const positiveInt = v.pipe(number(), int(), v.minValue(1));

/** A numeric id a recipe may name: (uid_t)-1 and beyond would read as "leave unchanged" (root) to setresuid. */
export const inIdRange = (spec: string): boolean =>
  spec.split(':').every((part) => !/^\d+$/.test(part) || Number(part) <= 2147483646);

/** `user` or `user:group` of a process. */
export const USER_SPEC = /^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/;

/** The kind of check, written in the recipe itself: a value can fill in a port or a path, never turn a URL into a command. */
export const LITERAL_CHECK_KIND = /^(?:(?:https?|tcp):\/\/|cmd:)/i;

/** Why `v` is not a health check as it runs (`http(s)://…`, `tcp://host:port`, `cmd:<command line>`), or undefined when it is one. */
export function healthCheckProblem(v: string): string | undefined {
  if (v.startsWith('cmd:')) return v.slice(4).trim() === '' ? 'the command is empty' : undefined;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return 'not a URL';
  }
  if (url.protocol === 'tcp:')
    return !url.hostname || !url.port || url.port === '0'
      ? 'tcp:// needs host:port with a port from 1 to 65535'
      : undefined;
  return url.protocol !== 'http:' && url.protocol !== 'https:' ? `unsupported scheme ${url.protocol}` : undefined;
}

/**
 * `schema` with a fast path in front of it: `fast` returns what the schema would for input it is sure is valid, or
 * undefined to let the schema decide (and explain). Everything else (the entries error messages walk for "did you
 * mean" hints) is the schema's own.
 */
export function withFastPath<S extends v.GenericSchema>(
  schema: S,
  fast: (raw: unknown) => v.InferOutput<S> | undefined,
): S {
  const wrapped = Object.create(schema) as S;
  const slow = (schema as unknown as { '~run': (d: { value: unknown }, c: unknown) => unknown })['~run'].bind(schema);
  Object.defineProperty(wrapped, '~run', {
    value: (dataset: { value: unknown }, config: unknown) => {
      const data = fast(dataset.value);
      return data !== undefined ? { typed: true, value: data } : slow(dataset, config);
    },
  });
  return wrapped;
}
