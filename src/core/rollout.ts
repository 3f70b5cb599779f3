// Staged rollouts (SPEC §14): `[rollout]` in fleet.toml cuts the fleet into waves, and each commit reaches wave k
// only once wave k−1 has shown it works. Pure: the schema, what the section alone can tell (percents, names), and
// which wave a device falls in. The gate itself is rollout-gate.ts; reading the fleet's reports is the agent's I/O.
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { int, minLength, number, refine, strictObject } from './valid.js';
import { parseDuration, formatDuration } from './duration.js';
import { CODES, type Diagnostic } from './errors.js';
import type { Labels } from './labels.js';
import { deviceNameField, labelSelector } from './label-schemas.js';
import { componentName, issue, MAX_DURATION_MS } from './schema-rules.js';
import { describe, type ParsedDocument } from './toml-document.js';

const deviceName = deviceNameField;

/** A bake: a Go duration, `0s` (no bake) up to a week. */
const bakeText = v.pipe(
  v.string(),
  refine<string>((t, ctx) => {
    const ms = parseDuration(t);
    if (ms === undefined)
      issue(ctx, CODES.BAD_DURATION, `"${t}" is not a duration`, 'use Go style: "30s", "10m", "1h30m"');
    else if (ms > MAX_DURATION_MS) issue(ctx, CODES.BAD_DURATION, `"${t}" is out of range`, 'between 0s and 168h');
  }),
);

const waveSchema = strictObject({
  // Named in reports, ref names and the fleet view: as plain as a component name.
  name: componentName,
  // Cumulative: the waves' percents rise to 100, and a device whose name hashes below a wave's percent (and above
  // the previous wave's) is in it.
  percent: v.optional(v.pipe(number(), int(), v.minValue(1), v.maxValue(100))),
  selector: v.optional(labelSelector),
  devices: v.optional(v.array(deviceName)),
});

export const rolloutSchema = strictObject({
  waves: v.pipe(v.array(waveSchema), minLength(1)),
  bake: v.optional(bakeText, '10m'),
  min_success: v.optional(v.pipe(number(), int(), v.minValue(1), v.maxValue(1_000_000)), 1),
  abort_failure_percent: v.optional(v.pipe(number(), v.minValue(0), v.maxValue(100)), 0),
  // Absent: true once the repository holds a device certificate (SPEC §15); decided where devices/ can be seen.
  require_enrolled: v.optional(v.boolean()),
});

export type RolloutSection = v.InferOutput<typeof rolloutSchema>;
export type Wave = RolloutSection['waves'][number];

/** The section with its bake in milliseconds, as the gate uses it. */
export interface Rollout {
  waves: Wave[];
  bakeMs: number;
  minSuccess: number;
  abortFailurePercent: number;
  /** Count only reports that verify (SPEC §15); undefined: as the repository says (true once devices/ holds a certificate). */
  requireEnrolled?: boolean;
}

export function rolloutOf(section: RolloutSection): Rollout {
  return {
    waves: section.waves,
    bakeMs: parseDuration(section.bake) ?? 0,
    minSuccess: section.min_success,
    abortFailurePercent: section.abort_failure_percent,
    ...(section.require_enrolled !== undefined && { requireEnrolled: section.require_enrolled }),
  };
}

/**
 * What `[rollout]` alone can tell, beyond its schema: unique wave names; each wave either a percent or names devices
 * (selector / devices), never both or neither; the percents rising strictly and the last wave 100, so that every
 * device falls in some wave. `raw` is the section as parsed, before the schema.
 */
export function checkRollout(raw: unknown, doc: Pick<ParsedDocument<unknown>, 'diagnostic'>): Diagnostic[] {
  if (typeof raw !== 'object' || raw === null || !Array.isArray((raw as { waves?: unknown }).waves)) return [];
  const waves = (raw as { waves: unknown[] }).waves;
  const out: Diagnostic[] = [];
  const first = new Map<string, number>();
  let lastPercent: { value: number; index: number } | undefined;
  waves.forEach((w, i) => {
    if (typeof w !== 'object' || w === null) return;
    const { name, percent, selector, devices } = w as Record<string, unknown>;
    const label = typeof name === 'string' ? `wave "${name}"` : `waves[${i}]`;
    if (typeof name === 'string') {
      const at = first.get(name);
      if (at === undefined) first.set(name, i);
      else
        out.push(
          doc.diagnostic(
            CODES.ROLLOUT_DUPLICATE_WAVE,
            ['rollout', 'waves', i, 'name'],
            `${label} is declared twice`,
            `first declared at rollout.waves[${at}]: wave names are unique`,
          ),
        );
    }
    const names = selector !== undefined || devices !== undefined;
    if (percent !== undefined && names)
      out.push(
        doc.diagnostic(
          CODES.ROLLOUT_WAVE_RULE,
          ['rollout', 'waves', i, 'percent'],
          `${label} has both a percent and a selector or devices`,
          'a wave is a share of the fleet (percent) or the devices it names (selector, devices), not both',
        ),
      );
    else if (percent === undefined && !names)
      out.push(
        doc.diagnostic(
          CODES.ROLLOUT_WAVE_RULE,
          ['rollout', 'waves', i],
          `${label} takes no device`,
          'give it a percent (cumulative, rising to 100), or a selector or devices list',
        ),
      );
    if (typeof percent === 'number') {
      if (lastPercent && percent <= lastPercent.value)
        out.push(
          doc.diagnostic(
            CODES.ROLLOUT_PERCENTS,
            ['rollout', 'waves', i, 'percent'],
            `${label}: percent ${percent} does not rise above ${lastPercent.value} (waves[${lastPercent.index}])`,
            'percents are cumulative: each wave covers the fleet up to its percent, so they rise, ending at 100',
          ),
        );
      lastPercent = { value: percent, index: i };
    }
  });
  const last = waves.length - 1;
  const lastWave = waves[last] as Record<string, unknown> | undefined;
  if (lastWave && typeof lastWave === 'object' && lastWave.percent !== 100)
    out.push(
      doc.diagnostic(
        CODES.ROLLOUT_PERCENTS,
        ['rollout', 'waves', last, ...(lastWave.percent !== undefined ? ['percent'] : [])],
        `the last wave${typeof lastWave.name === 'string' ? ` "${lastWave.name}"` : ''} has ${lastWave.percent === undefined ? 'no percent' : `percent ${typeof lastWave.percent === 'number' ? lastWave.percent : describe(lastWave.percent)}`}: devices no wave names would have no wave`,
        'end with a wave of percent = 100 (the rest of the fleet)',
      ),
    );
  return out;
}

/** 0–99 from the device's name alone: the same on every device and in `fleet status`, whatever the version. */
export function waveHash(device: string): number {
  return createHash('sha256').update(`keystone-wave\0${device}`).digest().readUInt32BE(0) % 100;
}

function names(w: Wave, device: string, labels: Labels): boolean {
  if (w.devices?.includes(device)) return true;
  if (!w.selector) return false;
  return Object.entries(w.selector).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

/**
 * The device's wave: the first wave that names it (devices, selector), else the first percent wave its name hashes
 * below. checkRollout guarantees the last wave is 100 %, so there always is one.
 */
export function waveOf(r: Pick<Rollout, 'waves'>, device: string, labels: Labels): { index: number; wave: Wave } {
  const named = r.waves.findIndex((w) => names(w, device, labels));
  if (named >= 0) return { index: named, wave: r.waves[named]! };
  const h = waveHash(device);
  const index = r.waves.findIndex((w) => w.percent !== undefined && h < w.percent);
  const i = index >= 0 ? index : r.waves.length - 1;
  return { index: i, wave: r.waves[i]! };
}

/** `canary 10 %, early 40 %, everyone 100 %; bake 10m0s, min_success 3, abort above 10 % failed` */
export function describeRollout(r: Rollout): string {
  const waves = r.waves
    .map((w) => `${w.name} ${w.percent !== undefined ? `${w.percent} %` : 'named devices'}`)
    .join(', ');
  return `${waves}; bake ${formatDuration(r.bakeMs)}, min_success ${r.minSuccess}, abort above ${r.abortFailurePercent} % failed`;
}
