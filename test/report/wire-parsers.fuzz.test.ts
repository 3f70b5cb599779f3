// Fuzzing the parsers of what a Git host sends back for rollouts (SPEC §14): the protocol v2 ls-refs answer, the
// receive-pack report-status, and rollout ref names; and the walk of an upload-pack answer before a device's notes tip
// is fetched (upload-pack-limits.ts, issue 28). Whatever the bytes, each returns a well-formed value or throws
// its own coded error: never another exception, never a value outside its contract. fast-check with arbitrary bytes
// and with mutations of valid answers (so that the inputs reach past the first check).
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OperationError } from '../../src/core/errors.js';
import { isValidRefName, parseLsRefsAnswer } from '../../src/git/ls-refs-answer.js';
import { readReport, ZERO_OID } from '../../src/report/receive-pack-push.js';
import { StatusDeliveryError } from '../../src/report/commit-status.js';
import { parseRolloutRef, rolloutRef } from '../../src/report/rollout-refs.js';
import { uploadPackCost } from '../../src/report/upload-pack-limits.js';
import { ROLLOUT_STATES } from '../../src/core/rollout-gate.js';

const RUNS = 2_000;
const pkt = (s: string) => `${(Buffer.byteLength(s) + 4).toString(16).padStart(4, '0')}${s}`;
const OID = 'a'.repeat(40);
const valid = Buffer.from(
  pkt(`${OID} refs/heads/main\n`) +
    pkt(`${'b'.repeat(40)} refs/keystone-rollout/canary/0a/dev-1/${OID}-success\n`) +
    '0000',
);

/** A valid answer with a few bytes changed, cut, or grown. */
const mutated = fc
  .tuple(
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
    fc.nat(),
    fc.uint8Array({ maxLength: 20 }),
  )
  .map(([flips, cut, extra]) => {
    const b = Buffer.from(valid);
    for (const [i, v] of flips) b[i % b.length] = v;
    return Buffer.concat([b.subarray(0, b.length - (cut % 8)), Buffer.from(extra)]);
  });

describe('fuzz: the ls-refs answer', () => {
  it('returns valid refs or throws a coded error, for arbitrary and mutated bytes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 400 }), mutated), (bytes) => {
        let refs;
        try {
          refs = parseLsRefsAnswer(bytes);
        } catch (e) {
          expect(e).toBeInstanceOf(OperationError);
          expect((e as OperationError).code).toMatch(/^KS_/);
          return;
        }
        for (const r of refs) {
          expect(r.oid).toMatch(/^[0-9a-f]{40}$/);
          expect(isValidRefName(r.ref)).toBe(true);
        }
        expect(new Set(refs.map((r) => r.ref)).size).toBe(refs.length);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('fuzz: the report-status of a push', () => {
  const updates = [
    { ref: 'refs/notes/keystone-devices/dev-1', old: OID, new: 'b'.repeat(40) },
    { ref: `refs/keystone-rollout/canary/0a/dev-1/${OID}-held`, old: 'c'.repeat(40), new: ZERO_OID },
  ];
  const line = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.constantFrom(
      'unpack ok',
      'unpack index-pack abnormal exit',
      ...updates.flatMap((u) => [`ok ${u.ref}`, `ng ${u.ref} stale info`, `ng ${u.ref} failed to lock`, `ng ${u.ref}`]),
    ),
  );
  it('gives one result per update, or a coded error', () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 6 }), (lines) => {
        let results;
        try {
          results = readReport(lines, updates, 'a push');
        } catch (e) {
          expect(e).toBeInstanceOf(StatusDeliveryError);
          return;
        }
        expect(results.map((r) => r.ref)).toEqual(updates.map((u) => u.ref));
        for (const r of results) expect(['ok', 'stale', 'rejected']).toContain(r.status);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('fuzz: rollout ref names', () => {
  it('accepts only canonical names, and what it accepts names itself again', () => {
    const part = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom('canary', 'failed', '0a', 'f', OID, `${OID}-success`, `dev-1-failure`, 'dev%2D1'),
    );
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 6 }), (parts) => {
        const ref = `refs/keystone-rollout/${parts.join('/')}`;
        const r = parseRolloutRef(ref);
        if (r === undefined) return;
        expect(ROLLOUT_STATES).toContain(r.state);
        expect(rolloutRef(r)).toBe(ref);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('fuzz: the upload-pack answer walked before a notes fetch', () => {
  // NAK, then a pack of a blob and a tree on side band 1.
  const entry = (type: number, data: Buffer) =>
    Buffer.concat([Buffer.from([(type << 4) | data.length]), deflateSync(data)]);
  const body = Buffer.concat([
    Buffer.from('PACK\0\0\0\x02\0\0\0\x02', 'latin1'),
    entry(3, Buffer.from('a note\n')),
    entry(2, Buffer.alloc(12, 1)),
  ]);
  const pack = Buffer.concat([body, createHash('sha1').update(body).digest()]);
  const answer = Buffer.concat([
    Buffer.from(pkt('NAK\n')),
    Buffer.from((pack.length + 5).toString(16).padStart(4, '0')),
    Buffer.from([1]),
    pack,
    Buffer.from('0000'),
  ]);
  const limits = { maxInflatedBytes: 1 << 16, maxObjects: 100 };
  const changed = fc
    .tuple(
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
      fc.nat(),
      fc.uint8Array({ maxLength: 20 }),
    )
    .map(([flips, cut, extra]) => {
      const b = Buffer.from(answer);
      for (const [i, v] of flips) b[i % b.length] = v;
      return Buffer.concat([b.subarray(0, b.length - (cut % 8)), Buffer.from(extra)]);
    });
  it('counts within the limits or throws a coded error, for arbitrary and mutated bytes', () => {
    expect(uploadPackCost(answer, limits, 'a fetch')).toEqual({ objects: 2, inflatedBytes: 19 });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
          changed,
        ),
        (bytes) => {
          let cost;
          try {
            cost = uploadPackCost(bytes, limits, 'a fetch');
          } catch (e) {
            expect(e).toBeInstanceOf(StatusDeliveryError);
            expect(['KS_STATUS_NOTES_TOO_LARGE', 'KS_STATUS_SERVER_ERROR']).toContain((e as StatusDeliveryError).code);
            return;
          }
          expect(cost.objects).toBeLessThanOrEqual(limits.maxObjects);
          expect(cost.inflatedBytes).toBeLessThanOrEqual(limits.maxInflatedBytes);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
