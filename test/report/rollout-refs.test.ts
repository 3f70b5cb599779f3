// The rollout ref layout (SPEC §8, §14): one ref per device and commit, named so that a wave (and a bucket of it)
// is one ls-refs prefix, and only the canonical name of a device counts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketOf, BUCKETS, parseRolloutRef, rolloutPrefixes, rolloutRef } from '../../src/report/rollout-refs.js';

const C = '0123456789abcdef0123456789abcdef01234567';

describe('rollout refs', () => {
  it('name wave, bucket, device and commit-state, and parse back', () => {
    const ref = rolloutRef({ wave: 'canary', device: 'edge-7', commit: C, state: 'success' });
    expect(ref).toBe(`refs/keystone-rollout/canary/${bucketOf('edge-7')}/edge-7/${C}-success`);
    expect(parseRolloutRef(ref)).toEqual({
      wave: 'canary',
      bucket: bucketOf('edge-7'),
      device: 'edge-7',
      commit: C,
      state: 'success',
    });
  });

  it('round-trips any device name and state (property)', () => {
    const state = fc.constantFrom('held', 'applying', 'success', 'failure', 'error', 'halted' as const);
    const device = fc
      .string({ minLength: 1, maxLength: 30, unit: 'grapheme' })
      .filter((d) => /^[^\s\p{Cc}]+$/u.test(d));
    fc.assert(
      fc.property(device, state, (d, s) => {
        const ref = rolloutRef({ wave: 'w1', device: d, commit: C, state: s });
        expect(parseRolloutRef(ref)).toMatchObject({ device: d, state: s, wave: 'w1' });
      }),
    );
  });

  it('refuses forged or foreign names: another encoding, the wrong bucket, unknown states, short commits', () => {
    const good = rolloutRef({ wave: 'canary', device: 'edge-7', commit: C, state: 'success' });
    expect(parseRolloutRef(good.replace('edge-7', 'edge%2D7'))).toBeUndefined();
    const other = BUCKETS.find((b) => b !== bucketOf('edge-7'))!;
    expect(parseRolloutRef(good.replace(`/${bucketOf('edge-7')}/`, `/${other}/`))).toBeUndefined();
    expect(parseRolloutRef(good.replace('-success', '-won'))).toBeUndefined();
    expect(parseRolloutRef(good.replace(C, C.slice(0, 12)))).toBeUndefined();
    expect(parseRolloutRef('refs/notes/keystone-devices/edge-7')).toBeUndefined();
    expect(parseRolloutRef(`refs/keystone-rollout/canary/${bucketOf('a')}/a/b/${C}-success`)).toBeUndefined();
  });

  it('a wave is listed by the exact subtree of each bucket it reads: nothing else under the wave matches', () => {
    const whole = rolloutPrefixes(['canary', 'early']);
    expect(whole).toHaveLength(512);
    expect(whole.slice(0, 2)).toEqual(['refs/keystone-rollout/canary/00/', 'refs/keystone-rollout/canary/01/']);
    expect(whole.at(-1)).toBe('refs/keystone-rollout/early/ff/');
    expect(rolloutPrefixes(['canary'], BUCKETS)).toEqual(rolloutPrefixes(['canary']));
    // A group of 16 (one hex digit) is its 16 buckets, each with its slash.
    const sample = rolloutPrefixes(['canary'], ['03', 'a']);
    expect(sample).toEqual([
      'refs/keystone-rollout/canary/03/',
      ...BUCKETS.filter((b) => b.startsWith('a')).map((b) => `refs/keystone-rollout/canary/${b}/`),
    ]);
    // A device's ref is under its bucket's prefix; a failure, names that are no bucket, another wave are under none.
    const listed = (ref: string) => whole.some((p) => ref.startsWith(p));
    expect(listed(rolloutRef({ wave: 'canary', device: 'edge-7', commit: C, state: 'success' }))).toBe(true);
    expect(listed(rolloutRef({ wave: 'canary', device: 'edge-7', commit: C, state: 'failure' }))).toBe(false);
    for (const junk of [
      'refs/keystone-rollout/canary/failed/x/y-error',
      'refs/keystone-rollout/canary/a3x/y',
      'refs/keystone-rollout/canary/zz/y',
      'refs/keystone-rollout/canary-2/00/y',
    ])
      expect(listed(junk), junk).toBe(false);
  });

  it('buckets are spread evenly over names, apart from the wave hash', () => {
    const n = new Map<string, number>();
    for (let i = 0; i < 25_600; i++) n.set(bucketOf(`dev-${i}`), (n.get(bucketOf(`dev-${i}`)) ?? 0) + 1);
    expect(n.size).toBe(256);
    // 100 per bucket, binomial: a standard deviation of ~10.
    for (const v of n.values()) expect(Math.abs(v - 100)).toBeLessThan(50);
  });
});
