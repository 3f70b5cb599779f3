// The Git source answers and has the branch: the agent's own cheap look (one protocol v2 ls-refs POST, falling back
// to the discovery; a local repository read from its files), bounded in time.
import { OperationError } from '../core/errors.js';
import { fullBranchRef, shortBranchRef } from '../git/git-repo-location.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import type { DoctorSource } from './doctor-setup.js';

export async function checkGitRemote(source: DoctorSource, timeoutMs: number): Promise<CheckResult> {
  if (source.kind === 'none') return skip('git-remote', 'no source to check (see source)');
  if (source.kind === 'dir') return skip('git-remote', `not a Git source (--dir ${source.root})`);
  if (source.tokenProblem !== undefined)
    return fail(
      'git-remote',
      source.tokenProblem,
      'give --git-token-file a readable file holding the token (or set KEYSTONE_GIT_TOKEN)',
      'KS_USAGE',
    );
  const branchRef = fullBranchRef(source.ref);
  try {
    // isomorphic-git only for a Git source, as in the agent.
    const { refListerFor } = await import('../source/ref-lister.js');
    const lister = refListerFor(source.repo, { ...(source.token !== undefined && { token: source.token }), timeoutMs });
    const { refs } = await lister.list([branchRef]);
    const ref = refs.find((r) => r.ref === branchRef);
    if (!ref)
      return fail(
        'git-remote',
        `${source.repo} answers, but has no branch ${shortBranchRef(branchRef)}`,
        `push the branch, or give --ref the branch the repository has`,
        'KS_GIT_REF_NOT_FOUND',
      );
    return pass('git-remote', `${source.repo} ${shortBranchRef(branchRef)} is at ${ref.oid.slice(0, 12)}`);
  } catch (e) {
    const code = e instanceof OperationError ? e.code : (e as { code?: string }).code;
    return fail('git-remote', (e as Error).message, fixFor(code, source.repo), code);
  }
}

function fixFor(code: string | undefined, repo: string): string {
  switch (code) {
    case 'KS_GIT_UNREACHABLE':
    case 'KS_GIT_TIMEOUT':
      return `check that the Git server is up and this device reaches it (DNS, routes, proxy), and that ${repo} is the right URL`;
    case 'KS_GIT_AUTH_FAILED':
      return 'give a token that may read the repository: --git-token-file FILE (or KEYSTONE_GIT_TOKEN)';
    case 'KS_GIT_REPO_NOT_FOUND':
    case 'KS_NOT_A_GIT_REPOSITORY':
      return `check --repo: ${repo} is no repository`;
    case 'KS_GIT_BAD_URL':
    case 'KS_GIT_CREDENTIALS_IN_URL':
      return 'give --repo as a plain http(s) URL or a local path, and any token in --git-token-file';
    case 'KS_GIT_SERVER_BUSY':
      return 'the server asked to be left alone for a while: try again later';
    default:
      return `check that ${repo} is a Git repository this device can read (git ls-remote ${repo} shows what Git itself sees)`;
  }
}
