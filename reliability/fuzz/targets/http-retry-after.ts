// `Retry-After` and `Date` headers of a Git host's answers (src/git/git-poll-delay.ts retryAfterMs, busyWaitMs;
// src/git/git-ls-refs.ts httpDate, statusError): a busy or hostile server must not silence a device for long,
// nor make a wait that is not a number.
import fc from 'fast-check';
import { OperationError } from '../../../src/core/errors.js';
import { busyWaitMs, MAX_RETRY_AFTER_MS, retryAfterMs } from '../../../src/git/git-poll-delay.js';
import { httpDate, statusError } from '../../../src/git/git-ls-refs.js';
import { holds, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const NOW = Date.UTC(2026, 11, 2);
const structured = fc
  .oneof(
    fc.nat().map(String),
    fc.constantFrom(
      '0',
      '120',
      '-1',
      '1.5',
      '+5',
      ' 60 ',
      '9'.repeat(400),
      'Wed, 21 Oct 2015 07:28:00 GMT',
      'Sun, 06 Nov 1994 08:49:37 GMT',
      'Wed, 31 Dec 9999 23:59:59 GMT',
      'Mon, 32 Jan 2026 00:00:00 GMT',
      'Wed, 21 Oct 2015 07:28:00 +0100',
      'Wed,',
      'Tuesday, 01-Jan-30 00:00:00 GMT',
      '',
    ),
    fc.date({ min: new Date(0), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toUTCString()),
  )
  .map(text);

export const httpRetryAfter: FuzzTarget = {
  name: 'http-retry-after',
  parses:
    'retryAfterMs, busyWaitMs, httpDate, statusError (src/git/git-poll-delay.ts, git-ls-refs.ts): Retry-After and Date headers',
  maxBytes: 512,
  testRuns: 2_000,
  dictionary: ['GMT', ', ', ':', 'Mon', 'Jan', '9999', '-', '+'],
  structured,
  check(input) {
    const value = utf8(input);
    const asked = retryAfterMs(value, NOW);
    holds(asked === undefined || asked >= 0, `Retry-After ${JSON.stringify(value)} asks for ${asked} ms`);
    if (asked !== undefined) {
      const wait = busyWaitMs(asked, 60_000);
      holds(Number.isFinite(wait) && wait >= 0 && wait <= MAX_RETRY_AFTER_MS, `a wait of ${wait} ms`);
    }
    const date = httpDate(value);
    holds(date === undefined || Number.isFinite(date), `Date ${JSON.stringify(value)} is ${date}`);
    for (const status of [429, 503, 401, 500, 404]) {
      const e = statusError(status, value, { url: 'https://git.example/fleet.git', what: 'fuzzing', authorized: true });
      holds(e instanceof OperationError && /^KS_GIT_[A-Z_]+$/.test(e.code), `HTTP ${status} gave ${e.code}`);
    }
    return asked === undefined && date === undefined ? 'refused' : 'accepted';
  },
};
