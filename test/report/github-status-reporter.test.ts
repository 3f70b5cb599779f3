// The GitHub commit status reporter against a local server that implements the documented contract (not a mock of
// our client): request fields and headers, 401 and 422 as permanent failures, 5xx and a dead server as retryable,
// GitHub's rate limit answers as retryable with the wait they ask for, and pacing. Clocks are injected: no sleeping.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  describe as describeText,
  describeFailure,
  describePending,
  isStatusDeliveryError,
  MAX_DESCRIPTION,
  statusContext,
  type CommitStatus,
} from '../../src/report/commit-status.js';
import { GitHubStatusReporter, ownerRepoFromUrl } from '../../src/report/github-status-reporter.js';
import { startGitHubContractServer, type GitHubContractServer } from '../support/github-contract-server.js';

const TOKEN = 'ghp_contract_token_1234';
const SHA = '0123456789abcdef0123456789abcdef01234567';
let gh: GitHubContractServer;

beforeAll(async () => {
  gh = await startGitHubContractServer({ token: TOKEN });
});
afterAll(async () => {
  await gh.stop();
});
afterEach(() => {
  gh.reset();
});

function reporter(over: Partial<ConstructorParameters<typeof GitHubStatusReporter>[0]> = {}): GitHubStatusReporter {
  // Pacing off unless a test is about it: with the real clock it would make back-to-back deliveries wait.
  return new GitHubStatusReporter({
    apiBase: gh.apiBase,
    owner: 'acme',
    repo: 'fleet',
    token: TOKEN,
    userAgent: 'keystone-test/1',
    minIntervalMs: 0,
    ...over,
  });
}

function status(over: Partial<CommitStatus> = {}): CommitStatus {
  return {
    commit: SHA,
    state: 'pending',
    description: 'applying: start api',
    context: statusContext('dev-a'),
    at: 1_700_000_000_000,
    ...over,
  };
}

async function failure(
  p: Promise<unknown>,
): Promise<Error & { code: string; retryable: boolean; data: { httpStatus?: number; retryAfterMs?: number } }> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isStatusDeliveryError(e)) throw new Error(`expected a StatusDeliveryError, got ${String(e)}`);
  return e;
}

describe('GitHubStatusReporter', () => {
  it('creates the status with the documented fields and headers', async () => {
    await reporter().deliver(status({ targetUrl: 'https://device.example/v1/history' }));
    const req = gh.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe(`/repos/acme/fleet/statuses/${SHA}`);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers.accept).toBe('application/vnd.github+json');
    expect(req.headers['x-github-api-version']).toBe('2022-11-28');
    expect(req.headers['user-agent']).toBe('keystone-test/1');
    expect(JSON.parse(req.body)).toEqual({
      state: 'pending',
      target_url: 'https://device.example/v1/history',
      description: 'applying: start api',
      context: 'keystone/dev-a',
    });
    expect(req.status).toBe(201);
    const [stored] = gh.list('acme', 'fleet', SHA);
    expect(stored).toMatchObject({
      state: 'pending',
      description: 'applying: start api',
      context: 'keystone/dev-a',
      target_url: 'https://device.example/v1/history',
    });
  });

  it('leaves target_url out when there is none, and lists newest first through the API', async () => {
    await reporter().deliver(status());
    await reporter().deliver(status({ state: 'success', description: 'applied: 4 components running' }));
    expect(JSON.parse(gh.requests[0]!.body)).not.toHaveProperty('target_url');
    const res = await fetch(`${gh.apiBase}/repos/acme/fleet/commits/${SHA}/statuses`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const list = (await res.json()) as { state: string }[];
    expect(list.slice(0, 2).map((s) => s.state)).toEqual(['success', 'pending']);
  });

  it('works under a Gitea/Forgejo style prefix', async () => {
    const gitea = await startGitHubContractServer({ token: TOKEN, prefix: '/api/v1' });
    try {
      await reporter({ apiBase: gitea.apiBase }).deliver(status());
      expect(gitea.requests[0]!.path).toBe(`/api/v1/repos/acme/fleet/statuses/${SHA}`);
      expect(gitea.list('acme', 'fleet', SHA)).toHaveLength(1);
    } finally {
      await gitea.stop();
    }
  });

  it('a wrong or missing token is a permanent KS_STATUS_AUTH that does not carry the token', async () => {
    const e = await failure(reporter({ token: 'ghp_wrong_one' }).deliver(status()));
    expect(e.code).toBe('KS_STATUS_AUTH');
    expect(e.retryable).toBe(false);
    expect(e.data.httpStatus).toBe(401);
    expect(e.message).toContain('Bad credentials');
    expect(e.message).not.toContain('ghp_wrong_one');
  });

  it('a validation failure (422) is permanent and says which field', async () => {
    // The reporter refuses a bad status itself; a server that disagrees with a well-formed one is still a 422.
    const bad = await failure(reporter().deliver(status({ state: 'done' as CommitStatus['state'] })));
    expect(bad.code).toBe('KS_STATUS_INVALID');
    expect(gh.requests).toHaveLength(0);
    const raw = await fetch(`${gh.apiBase}/repos/acme/fleet/statuses/${SHA}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ state: 'done' }),
    });
    expect(raw.status).toBe(422);
    expect(await raw.json()).toMatchObject({ message: 'Validation Failed', errors: [{ field: 'state' }] });
    const shortSha = await fetch(`${gh.apiBase}/repos/acme/fleet/statuses/abc123`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{"state":"success"}',
    });
    expect(shortSha.status).toBe(422);
    const long = await fetch(`${gh.apiBase}/repos/acme/fleet/statuses/${SHA}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ state: 'success', description: 'y'.repeat(141) }),
    });
    expect(long.status).toBe(422);
  });

  it('a 422 for a well-formed status (GitHub caps statuses per commit and context) is permanent KS_STATUS_REJECTED', async () => {
    const capped = await startGitHubContractServer({ token: TOKEN, maxStatusesPerContext: 1 });
    try {
      const r = reporter({ apiBase: capped.apiBase });
      await r.deliver(status());
      const e = await failure(r.deliver(status({ state: 'success' })));
      expect([e.code, e.retryable, e.data.httpStatus]).toEqual(['KS_STATUS_REJECTED', false, 422]);
      expect(e.message).toContain('maximum number of statuses');
    } finally {
      await capped.stop();
    }
  });

  it('unknown repository (404) is permanent', async () => {
    const e = await failure(reporter({ apiBase: `${gh.apiBase}/nowhere` }).deliver(status()));
    expect(e.code).toBe('KS_STATUS_REJECTED');
    expect(e.data.httpStatus).toBe(404);
    expect(e.retryable).toBe(false);
  });

  it('503 and a server that is gone are retryable', async () => {
    gh.failNext = 1;
    const e = await failure(reporter().deliver(status()));
    expect([e.code, e.retryable, e.data.httpStatus]).toEqual(['KS_STATUS_SERVER_ERROR', true, 503]);
    await gh.stop();
    try {
      const gone = await failure(reporter().deliver(status()));
      expect([gone.code, gone.retryable]).toEqual(['KS_STATUS_UNREACHABLE', true]);
    } finally {
      await gh.start();
    }
    await reporter().deliver(status());
    expect(gh.requests.at(-1)!.status).toBe(201);
  });
});

/** What a rate-limited delivery failed with: [code, retryable, HTTP status, wait asked]. */
async function limited(r: GitHubStatusReporter): Promise<[string, boolean, number | undefined, number | undefined]> {
  const e = await failure(r.deliver(status()));
  return [e.code, e.retryable, e.data.httpStatus, e.data.retryAfterMs];
}

describe("GitHubStatusReporter at GitHub's rate limits", () => {
  const NOW = Date.parse('Tue, 01 Dec 2026 12:00:00 GMT');

  it('a 403 with Retry-After is a retryable KS_STATUS_RATE_LIMITED for that long; a 403 that is no limit stays KS_STATUS_AUTH', async () => {
    const r = reporter({ now: () => NOW });
    gh.rateLimit = { kind: 'secondary', retryAfter: '30' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 30_000]); // the header wins over the one-minute default
    gh.rateLimit = { kind: 'secondary', retryAfter: '5', message: 'Forbidden' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 5_000]); // the header alone is enough
    gh.rateLimit = undefined;
    const e = await failure(reporter({ token: gh.readOnlyToken }).deliver(status()));
    expect([e.code, e.retryable, e.data.httpStatus]).toEqual(['KS_STATUS_AUTH', false, 403]);
    expect(e.message).toContain('Resource not accessible');
    expect(gh.list('acme', 'fleet', SHA)).toEqual([]);
  });

  it('a 403 that only says "secondary rate limit" or "abuse detection" waits a minute, longer on each repeat, until a delivery', async () => {
    const r = reporter({ now: () => NOW });
    gh.rateLimit = { kind: 'secondary' };
    const first = await failure(r.deliver(status()));
    expect([first.code, first.retryable, first.data.retryAfterMs]).toEqual(['KS_STATUS_RATE_LIMITED', true, 60_000]);
    expect(first.message).toContain('secondary rate limit');
    gh.rateLimit = {
      kind: 'secondary',
      message: 'You have triggered an ABUSE DETECTION mechanism. Please wait a few minutes before you try again.',
    };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 120_000]);
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 240_000]);
    gh.rateLimit = undefined;
    await r.deliver(status());
    gh.rateLimit = { kind: 'secondary' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 60_000]); // a delivery in between starts over
  });

  it('a 429 honours Retry-After in seconds and as an HTTP date on the injected clock, and waits a minute without one', async () => {
    const r = reporter({ now: () => NOW });
    gh.rateLimit = { kind: 'secondary', status: 429, retryAfter: '7' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 429, 7_000]);
    gh.rateLimit = { kind: 'secondary', status: 429, retryAfter: 'Tue, 01 Dec 2026 12:02:00 GMT' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 429, 120_000]);
    gh.rateLimit = { kind: 'secondary', status: 403, retryAfter: 'Tue, 01 Dec 2026 12:00:45 GMT' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 45_000]);
    gh.rateLimit = { kind: 'secondary', status: 429, message: 'Too Many Requests' };
    expect(await limited(r)).toEqual(['KS_STATUS_RATE_LIMITED', true, 429, 60_000]);
  });

  it('the primary limit (x-ratelimit-remaining 0) waits until x-ratelimit-reset by the injected clock, not Date.now', async () => {
    const later = Date.parse('Tue, 01 Dec 2099 12:00:00 GMT'); // far from the real clock, so Date.now would show
    gh.rateLimit = { kind: 'primary', resetEpochSeconds: later / 1000 + 90 };
    expect(await limited(reporter({ now: () => later }))).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 90_000]);
    gh.rateLimit = { kind: 'primary', resetEpochSeconds: later / 1000 - 10 }; // already reset: try again at once
    expect(await limited(reporter({ now: () => later }))).toEqual(['KS_STATUS_RATE_LIMITED', true, 403, 0]);
  });

  it('paces its requests at least minIntervalMs apart (default 1 s), waiting on the injected clock', async () => {
    let t = NOW;
    const waits: number[] = [];
    const sleep = (ms: number) => {
      waits.push(ms);
      t += ms;
      return Promise.resolve();
    };
    const r = reporter({ minIntervalMs: undefined, elapsed: () => t, sleep });
    await r.deliver(status());
    await r.deliver(status({ state: 'success' }));
    t += 400;
    await r.deliver(status({ state: 'failure' }));
    expect(waits).toEqual([1_000, 600]);
    t += 5_000;
    await r.deliver(status({ state: 'error' }));
    expect(waits).toEqual([1_000, 600]); // a quiet reporter does not wait
    // Concurrent callers queue for their slots rather than all going at once.
    const fast = reporter({ minIntervalMs: 250, elapsed: () => t, sleep: (ms) => (waits.push(ms), Promise.resolve()) });
    waits.length = 0;
    await Promise.all([0, 1, 2].map(() => fast.deliver(status())));
    expect(waits).toEqual([250, 500]);
    expect(gh.requests.map((q) => q.status)).toEqual([201, 201, 201, 201, 201, 201, 201]);
  });

  it('paces on the monotonic clock: a wall clock stepped back a day holds nothing', async () => {
    let wall = NOW;
    const waits: number[] = [];
    const r = reporter({
      minIntervalMs: undefined,
      now: () => wall,
      elapsed: () => 5_000,
      sleep: (ms) => (waits.push(ms), Promise.resolve()),
    });
    await r.deliver(status());
    wall -= 86_400_000;
    await r.deliver(status({ state: 'success' }));
    // One slot's wait (the monotonic clock stood still), not a day.
    expect(waits).toEqual([1_000]);
  });
});

describe('descriptions', () => {
  it('fit in 140 characters on one line, cut at a word with an ellipsis', () => {
    const long = describeFailure(
      Array.from({ length: 20 }, (_, i) => ({ name: `component-${i}`, reason: 'health check timed out\nafter 30s' })),
    );
    expect([...long].length).toBeLessThanOrEqual(MAX_DESCRIPTION);
    expect(long).not.toMatch(/\n/);
    expect(long.endsWith('…')).toBe(true);
    expect(long.startsWith('failed: component-0 (health check timed out after 30s); component-1')).toBe(true);
    expect(describeText('short  and\nsweet')).toBe('short and sweet');
    expect([...describeText('🙂'.repeat(200))]).toHaveLength(MAX_DESCRIPTION);
    expect(describePending({ startOrder: ['api', 'web'], stopOrder: ['old'], noTouch: ['db'] })).toBe(
      'applying: start api, web; stop old; 1 unchanged',
    );
  });

  it('owner and repo come from the followed remote URL', () => {
    expect(ownerRepoFromUrl('https://github.com/acme/fleet.git')).toEqual({ owner: 'acme', repo: 'fleet' });
    expect(ownerRepoFromUrl('git@github.com:acme/fleet.git')).toEqual({ owner: 'acme', repo: 'fleet' });
    expect(ownerRepoFromUrl('https://gitea.example/sub/acme/fleet')).toEqual({ owner: 'acme', repo: 'fleet' });
    expect(ownerRepoFromUrl('/srv/git/fleet.git')).toBeUndefined();
  });
});
