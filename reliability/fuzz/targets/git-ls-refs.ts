// The protocol v2 ls-refs answer a Git host sends (src/git/ls-refs-answer.ts parseLsRefsAnswer): the agent's poll,
// the rollout gate's reads. Seeds were captured from `git http-backend`. Folds in test/report/wire-parsers.fuzz.test.ts.
import { OperationError } from '../../../src/core/errors.js';
import { isValidRefName, parseLsRefsAnswer } from '../../../src/git/ls-refs-answer.js';
import { holds, refusedWith, type FuzzTarget } from '../fuzz-target.js';
import { refLines } from '../pkt-line.js';

export const gitLsRefs: FuzzTarget = {
  name: 'git-ls-refs',
  parses: 'parseLsRefsAnswer (src/git/ls-refs-answer.ts): the ls-refs answer of a Git host',
  maxBytes: 8 * 1024,
  testRuns: 2_000,
  dictionary: [
    '0000',
    '0001',
    '0004',
    '0005',
    'ERR ',
    ' peeled:',
    ' symref-target:',
    'refs/heads/',
    '..',
    '.lock',
    '@{',
    '\n',
  ],
  structured: refLines,
  check(input) {
    let refs;
    try {
      refs = parseLsRefsAnswer(input, 'https://git.example/fleet.git');
    } catch (e) {
      return refusedWith(e, (x) => x instanceof OperationError && /^KS_GIT_/.test(x.code));
    }
    for (const r of refs) {
      holds(/^[0-9a-f]{40}$/.test(r.oid), `oid ${r.oid} is not 40 lowercase hex`);
      holds(isValidRefName(r.ref), `${r.ref} is not a ref name`);
    }
    holds(new Set(refs.map((r) => r.ref)).size === refs.length, 'a ref listed twice');
    return 'accepted';
  },
};
