// Query strings and path segments of the API, parsed directly (fast, beside api-request which goes through the
// server): src/api/query-params.ts and component-target.ts. Input: a query string, then optionally `#` and the
// path segment after /v1/components/. Every refusal is a 4xx ApiError with a KS_ code.
import { parse } from 'node:querystring';
import fc from 'fast-check';
import { ApiError } from '../../../src/api/api-error.js';
import { parseComponentTarget } from '../../../src/api/component-target.js';
import {
  MAX_TIMEOUT_MS,
  parseBool,
  parseIntParam,
  parseTimeout,
  parseWait,
  strictQuery,
  WAIT_VALUES,
} from '../../../src/api/query-params.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const isClientError = (e: unknown) =>
  e instanceof ApiError && e.statusCode >= 400 && e.statusCode < 500 && /^KS_[A-Z0-9_]+$/.test(e.code);

const pair = fc.tuple(
  fc.constantFrom('dry', 'wait', 'timeout', 'limit', 'x', '__proto__', 'constructor', 'hasOwnProperty'),
  fc.oneof(
    fc.constantFrom(
      'true',
      'false',
      'health',
      'none',
      'started',
      '90s',
      '0s',
      '1h',
      '1h0m1s',
      '-1s',
      '1e3',
      '10',
      '0',
      '99999999999999999',
      '0x10',
      ' 1',
      '',
      '%00',
      '%E2%82%AC',
    ),
    fc.string({ maxLength: 6 }),
  ),
);
const structured = fc
  .tuple(
    fc.array(pair, { maxLength: 4 }),
    fc.oneof(
      fc.constantFrom(
        'web',
        'web:restart',
        'app/web:stop',
        'a:b:c',
        'com.acme-x.y:start',
        'workers/2',
        '',
        ':',
        'x'.repeat(64),
        '.hidden',
      ),
      fc.string({ maxLength: 12 }),
    ),
  )
  .map(([q, seg]) => text(`${q.map(([k, v]) => `${k}=${v}`).join('&')}#${seg}`));

export const queryParams: FuzzTarget = {
  name: 'query-params',
  parses: 'strictQuery, parseBool, parseWait, parseTimeout, parseIntParam, parseComponentTarget (src/api/)',
  maxBytes: 1024,
  testRuns: 2_000,
  dictionary: ['&', '=', '#', ':', '/', 'wait=', 'timeout=', 'dry=', 'limit=', '%'],
  structured,
  check(input) {
    const s = utf8(input);
    const hash = s.indexOf('#');
    const query = parse(hash < 0 ? s : s.slice(0, hash));
    const segment = hash < 0 ? undefined : s.slice(hash + 1);
    let outcome: 'accepted' | 'refused' = 'accepted';
    try {
      const q = strictQuery(query, ['dry', 'wait', 'timeout', 'limit']);
      parseBool('dry', q.dry, false);
      holds(WAIT_VALUES.includes(parseWait(q.wait)), 'a wait outside its values');
      const t = parseTimeout(q.timeout);
      holds(t.ms > 0 && t.ms <= MAX_TIMEOUT_MS && t.text.length > 0, `timeout ${JSON.stringify(t)}`);
      const n = parseIntParam('limit', q.limit, undefined, 1, 1000);
      holds(n === undefined || (Number.isSafeInteger(n) && n >= 1 && n <= 1000), `limit ${n}`);
    } catch (e) {
      outcome = refusedWith(e, isClientError);
    }
    if (segment !== undefined) {
      try {
        const t = parseComponentTarget(segment);
        holds(t.name.length > 0 && !t.name.includes(':'), `name ${JSON.stringify(t.name)}`);
      } catch (e) {
        outcome = refusedWith(e, isClientError);
      }
    }
    return outcome;
  },
};
