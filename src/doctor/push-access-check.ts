// Whether this device can write the repository it follows (issue 28, finding 2). A device that can push there can
// change what every device of the fleet runs: it could promote a signed branch, or flood the followed branch. Reports
// need a push credential; they belong in a repository of their own (--status-repo), and the followed repository's
// credential should only read. Asked of the server, not guessed: the receive-pack discovery (what `git push` asks
// first) answers a credential that may push, and refuses one that may not. Nothing is pushed.
import { accessSync, constants } from 'node:fs';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { gitHttpAgent } from '../git/git-http-agent.js';
import { sameRepository } from '../git/git-repo-location.js';
import { pass, skip, warn, type CheckResult } from './check-result.js';
import type { DoctorSource } from './doctor-setup.js';

const FIX_SEPARATE =
  'give reports a repository of their own: --status-repo URL with --status-token-file (a token that may push there), and a read-only token for --repo (docs/security.md)';

export async function checkPushAccess(source: DoctorSource, timeoutMs: number): Promise<CheckResult> {
  if (source.kind !== 'git') return skip('push-access', 'not a Git source');
  if (source.tokenProblem !== undefined) return skip('push-access', 'the Git token cannot be read (see git-remote)');
  if (source.gitNotes && (source.statusRepo === undefined || sameRepository(source.statusRepo, source.repo)))
    return warn(
      'push-access',
      `reports go to the followed repository ${source.repo}, so this device's credential can push to it: a compromised device could change what every device runs`,
      FIX_SEPARATE,
    );
  // Every credential the device holds is asked about: the reports token may reach the followed repository too (one
  // token scoped to both, or the reports repository named by another host name for the same server).
  const held = [
    { flag: '--git-token-file', token: source.token },
    ...(source.gitNotes && source.statusToken !== undefined
      ? [{ flag: '--status-token-file', token: source.statusToken }]
      : []),
  ];
  let unknown = false;
  for (const { flag, token } of held) {
    const can = await canPush(source.repo, token, timeoutMs);
    if (can === 'yes')
      return warn(
        'push-access',
        `the credential of ${flag} can push to ${source.repo}: a compromised device could change what every device runs`,
        flag === '--git-token-file'
          ? 'give --git-token-file a read-only token (a deploy token with read access only); reports have their own (--status-token-file)'
          : 'scope the reports token to the reports repository alone',
      );
    if (can === 'unknown') unknown = true;
  }
  if (unknown)
    return skip(
      'push-access',
      `cannot tell whether this device's credentials can push to ${source.repo} (the server did not answer the push discovery plainly)`,
    );
  return pass(
    'push-access',
    `${source.repo} is read-only for this device${source.gitNotes ? `; reports go to ${source.statusRepo}` : ''}`,
  );
}

/** `yes` when the server would take a push with this credential (a local repository: when it is writable here). */
export async function canPush(
  repo: string,
  token: string | undefined,
  timeoutMs: number,
): Promise<'yes' | 'no' | 'unknown'> {
  if (!/^https?:\/\//i.test(repo)) {
    try {
      // A bare repository's refs, or a work tree's .git/refs: whoever may write them may move the branch.
      accessSync(join(repo, 'refs'), constants.W_OK);
      return 'yes';
    } catch {
      try {
        accessSync(join(repo, '.git', 'refs'), constants.W_OK);
        return 'yes';
      } catch {
        return 'no';
      }
    }
  }
  const url = `${repo.replace(/\/+$/, '')}/info/refs?service=git-receive-pack`;
  const headers: Record<string, string> = { 'user-agent': 'git/keystone-doctor' };
  if (token !== undefined) headers.authorization = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  return new Promise((resolve) => {
    const send = /^https:/i.test(url) ? httpsRequest : request;
    const req = send(url, { method: 'GET', headers, agent: gitHttpAgent(url), timeout: timeoutMs }, (res) => {
      res.resume();
      const type = String(res.headers['content-type'] ?? '');
      if (res.statusCode === 200 && type.startsWith('application/x-git-receive-pack-advertisement')) resolve('yes');
      else if (res.statusCode === 401 || res.statusCode === 403 || res.statusCode === 404) resolve('no');
      else resolve('unknown');
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve('unknown'));
    req.end();
  });
}
