// What the agent takes for a Git commit id: 40 lowercase hex digits, the whole string, and nothing else.
import { describe, expect, it } from 'vitest';
import { COMMIT_ID, isCommitId } from '../../src/git/commit-id.js';

describe('isCommitId', () => {
  const sha = '3f2a1c0d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49';

  it('takes a SHA-1 commit id', () => {
    expect(isCommitId(sha)).toBe(true);
    expect(COMMIT_ID.test(sha)).toBe(true);
  });

  it('refuses a revision that is no commit, upper case, a short or SHA-256 id, and anything around the id', () => {
    for (const id of [
      'dir:f41ef900a015',
      'manual:1',
      sha.toUpperCase(),
      sha.slice(0, 12),
      sha + sha.slice(0, 24),
      ` ${sha}`,
      `${sha}\n`,
      '',
    ])
      expect(isCommitId(id), JSON.stringify(id)).toBe(false);
  });

  it('gives the same answer however often it is asked (the regex keeps no state)', () => {
    expect([isCommitId(sha), isCommitId(sha), isCommitId(sha)]).toEqual([true, true, true]);
  });
});
