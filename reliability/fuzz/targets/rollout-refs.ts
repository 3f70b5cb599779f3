// Rollout ref names listed by a Git host (src/report/rollout-refs.ts parseRolloutRef): anyone who can push can push
// any ref, so only the canonical form counts. Folds in test/report/wire-parsers.fuzz.test.ts.
import fc from 'fast-check';
import { ROLLOUT_STATES } from '../../../src/core/rollout-gate.js';
import { bucketOf, parseRolloutRef, ROLLOUT_PREFIX, rolloutRef } from '../../../src/report/rollout-refs.js';
import { holds, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const OID = 'a'.repeat(40);
const part = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    'canary',
    'failed',
    '0a',
    'f',
    bucketOf('dev-1'),
    OID,
    `${OID}-success`,
    `${OID}-held`,
    'dev-1-failure',
    'dev%2D1',
    'dev-1',
    'd%C3%A9v',
    '%',
    '..',
  ),
);
const structured = fc
  .array(part, { minLength: 1, maxLength: 6 })
  .map((parts) => text(`${ROLLOUT_PREFIX}${parts.join('/')}`));

export const rolloutRefs: FuzzTarget = {
  name: 'rollout-refs',
  parses: 'parseRolloutRef (src/report/rollout-refs.ts): rollout ref names from ls-refs',
  maxBytes: 512,
  testRuns: 2_000,
  dictionary: [ROLLOUT_PREFIX, '/failed/', '-success', '-failure', '-held', '-error', '%2', '.lock', OID],
  structured,
  check(input) {
    const ref = utf8(input);
    const r = parseRolloutRef(ref);
    if (r === undefined) return 'refused';
    holds(ROLLOUT_STATES.includes(r.state), `state ${r.state}`);
    holds(r.bucket === bucketOf(r.device), "the bucket is not the device's");
    holds(rolloutRef(r) === ref, `${ref} is not the canonical name of what it parses to (${rolloutRef(r)})`);
    return 'accepted';
  },
};
