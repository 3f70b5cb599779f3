// The report-status a Git host answers a push with (src/report/receive-pack-push.ts readReport): `unpack ok`, then
// `ok <ref>` / `ng <ref> <reason>` per update. Input lines are the pkt-line payloads, one per line of the input.
import fc from 'fast-check';
import { StatusDeliveryError } from '../../../src/report/commit-status.js';
import { readReport, ZERO_OID } from '../../../src/report/receive-pack-push.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const OID = 'a'.repeat(40);
const UPDATES = [
  { ref: 'refs/notes/keystone-devices/dev-1', old: OID, new: 'b'.repeat(40) },
  { ref: `refs/keystone-rollout/canary/0a/dev-1/${OID}-held`, old: 'c'.repeat(40), new: ZERO_OID },
];
const line = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.constantFrom(
    'unpack ok',
    'unpack index-pack abnormal exit',
    'option refname refs/x',
    ...UPDATES.flatMap((u) => [
      `ok ${u.ref}`,
      `ng ${u.ref} stale info`,
      `ng ${u.ref} failed to lock`,
      `ng ${u.ref}`,
      `ng ${u.ref} `,
      `ok ${u.ref} `,
    ]),
  ),
);

export const receivePackReport: FuzzTarget = {
  name: 'receive-pack-report',
  parses: 'readReport (src/report/receive-pack-push.ts): the report-status of a push',
  maxBytes: 4 * 1024,
  testRuns: 2_000,
  dictionary: ['unpack ok\n', 'ok ', 'ng ', ' stale info', ' failed to lock', UPDATES[0]!.ref, UPDATES[1]!.ref, '\n'],
  structured: fc.array(line, { maxLength: 6 }).map((ls) => text(ls.join('\n'))),
  check(input) {
    let results;
    try {
      results = readReport(utf8(input).split('\n'), UPDATES, 'a push');
    } catch (e) {
      return refusedWith(e, (x) => x instanceof StatusDeliveryError && x.code === 'KS_STATUS_SERVER_ERROR');
    }
    holds(
      results.length === UPDATES.length && results.every((r, i) => r.ref === UPDATES[i]!.ref),
      'not one result per update, in order',
    );
    for (const r of results) holds(['ok', 'stale', 'rejected'].includes(r.status), `status ${r.status}`);
    return 'accepted';
  },
};
