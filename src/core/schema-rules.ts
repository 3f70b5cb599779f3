// Reusable zod field rules that attach Keystone error codes, so schema failures map to stable codes.
import { z } from 'zod';
import semver from 'semver';
import { parseDuration } from './duration.js';
import { CODES, type ErrorCode } from './errors.js';

/** The params key a custom zod issue uses to carry its Keystone code. */
export const KS_CODE = 'ksCode';

export function issue(ctx: z.RefinementCtx, code: ErrorCode, message: string, hint?: string): void {
  ctx.addIssue({ code: 'custom', message, params: { [KS_CODE]: code, hint } });
}

/** Timers past this misfire in Node (setTimeout's 2^31 ms limit); no probe or install needs a week. */
export const MAX_DURATION_MS = 7 * 24 * 3_600_000;

/** A Go-style duration string, more than zero and at most a week. */
export const durationText = z.string().superRefine((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) issue(ctx, CODES.BAD_DURATION, `"${v}" is not a duration`, 'use Go style: "200ms", "10s", "2m0s", "1h30m"');
  else if (ms < 1 || ms > MAX_DURATION_MS) issue(ctx, CODES.BAD_DURATION, `"${v}" is out of range`, 'between 1ms and 168h');
});

export const semverText = z.string().superRefine((v, ctx) => {
  // Strict: the text must be exactly a version (build metadata allowed), not a loose "v1.2.3" or " 1.2.3".
  const p = semver.parse(v);
  if (!p || `${p.version}${p.build.length ? `+${p.build.join('.')}` : ''}` !== v)
    issue(ctx, CODES.BAD_SEMVER, `"${v}" is not a semantic version`, 'e.g. "2.7.5" or "1.0.0-rc.1"');
});

export const semverRangeText = z.string().superRefine((v, ctx) => {
  if (v.trim() === '' || semver.validRange(v) === null)
    issue(ctx, CODES.BAD_SEMVER_RANGE, `"${v}" is not a semver range`, 'e.g. ">=2.7.0", "^1.4", "1.x"');
});

/** Reverse-DNS identity such as com.acme.influxdb: at least two dot-separated labels. */
export const reverseDnsName = z.string().superRefine((v, ctx) => {
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9_-]*[a-z0-9])?)+$/i.test(v) || v.length > 253)
    issue(ctx, CODES.BAD_NAME, `"${v}" is not a reverse-DNS name`, 'e.g. "com.acme.influxdb"');
});

/** A component's name on a device: used in URLs (`/v1/components/{name}:restart`), file names and logs, so kept plain. `/` is reserved for composite members. */
export const componentName = z.string().superRefine((v, ctx) => {
  if (!/^[a-z0-9][a-z0-9._-]{0,62}$/i.test(v) || v.includes('..'))
    issue(
      ctx,
      CODES.BAD_NAME,
      `"${v}" is not a valid component name`,
      'letters, digits, ".", "_" and "-", starting with a letter or digit, at most 63 characters',
    );
});

export const portNumber = z.number().int().min(1).max(65535);
export const positiveInt = z.number().int().min(1);
