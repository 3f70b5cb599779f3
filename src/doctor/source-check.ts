// The source the agent would follow: one of --dir and --repo, usable as given.
import { statSync } from 'node:fs';
import { OperationError } from '../core/errors.js';
import { parseGitRepo, shortBranchRef, fullBranchRef } from '../git/git-repo-location.js';
import { fail, pass, type CheckResult } from './check-result.js';
import type { DoctorSource } from './doctor-setup.js';

export function checkSource(source: DoctorSource): CheckResult {
  if (source.kind === 'none')
    return fail(
      'source',
      source.problem,
      'give one source: --repo URL|PATH (Git) or --dir PATH (a development directory), on the command line or in --config FILE',
      'KS_USAGE',
    );
  if (source.kind === 'dir') {
    let isDir = false;
    try {
      isDir = statSync(source.root).isDirectory();
    } catch {
      // reported below
    }
    return isDir
      ? pass('source', `directory ${source.root} (development: each settled change is applied)`)
      : fail(
          'source',
          `--dir ${source.root} is not a directory`,
          'give --dir the repository root (the directory holding recipes/ and plans/)',
        );
  }
  try {
    const loc = parseGitRepo(source.repo);
    return pass(
      'source',
      `Git ${loc.kind === 'http' ? loc.url : `repository ${loc.path}`}, branch ${shortBranchRef(fullBranchRef(source.ref))}`,
    );
  } catch (e) {
    return fail(
      'source',
      (e as Error).message,
      'give --repo as a plain http(s) URL or a local path, and any token in --git-token-file',
      e instanceof OperationError ? e.code : undefined,
    );
  }
}
