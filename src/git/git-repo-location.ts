// What `--repo` names: an HTTP(S) remote or a local repository, and the label people see for it.
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OperationError } from '../core/errors.js';

export type GitRepoLocation =
  { kind: 'http'; url: string; label: string; cacheKey: string } | { kind: 'local'; path: string; label: string };

/**
 * Parses `--repo`: `http://…` or `https://…` is a remote, `file://…` or anything else a local path.
 *
 * A URL with credentials in it (`https://user:token@host/…`) is refused rather than silently stripped: a URL
 * ends up in process listings, shell history, unit files and the state store, so a token in it would leak
 * in all of them. The token goes in `token` (from a file or the environment) instead. The error names the
 * URL without its credentials. A query string or fragment is refused for the same reason (`?access_token=`).
 */
export function parseGitRepo(repo: string): GitRepoLocation {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(repo)) {
    let u: URL;
    try {
      u = new URL(repo);
    } catch {
      throw new OperationError('KS_GIT_BAD_URL', 'the repository URL cannot be parsed');
    }
    if (u.protocol === 'file:') return local(fileURLToPath(u));
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new OperationError(
        'KS_GIT_BAD_URL',
        `unsupported repository URL scheme ${u.protocol} (http, https or a local path)`,
      );
    const clean = `${u.protocol}//${u.host}${u.pathname}`;
    if (u.username || u.password)
      throw new OperationError(
        'KS_GIT_CREDENTIALS_IN_URL',
        `the repository URL ${clean} carries credentials; give the token separately (never in the URL, which shows in process listings and logs)`,
      );
    if (u.search || u.hash)
      throw new OperationError(
        'KS_GIT_BAD_URL',
        `the repository URL ${clean} has a query or fragment; give the plain repository URL`,
      );
    return {
      kind: 'http',
      url: clean,
      label: clean,
      cacheKey: createHash('sha256').update(clean).digest('hex').slice(0, 16),
    };
  }
  if (/^[^/\s]+@[^/\s]+:/.test(repo))
    throw new OperationError('KS_GIT_BAD_URL', 'SSH repositories are not supported (http, https or a local path)');
  return local(repo);
}

function local(path: string): GitRepoLocation {
  const abs = resolve(path);
  return { kind: 'local', path: abs, label: abs };
}

/** `refs/heads/main` for `main`; a full ref is kept as it is. */
export function fullBranchRef(ref: string): string {
  return ref.startsWith('refs/') ? ref : `refs/heads/${ref}`;
}

/** The short name people use: `main` for `refs/heads/main`. */
export function shortBranchRef(ref: string): string {
  return ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : ref;
}

/** A URL fit for a message: any user name or password in it replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) u.username = u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * Whether two repository locations name the same repository, as far as the text tells: the scheme and host in any
 * case, a default port, a trailing slash or `.git`, and the loopback names are one. (The push discovery above is
 * what settles it for a server known by two names.)
 */
export function sameRepository(a: string, b: string): boolean {
  return repositoryKey(a) === repositoryKey(b);
}

function repositoryKey(location: string): string {
  if (!/^https?:\/\//i.test(location))
    return location
      .replace(/\/+$/, '')
      .replace(/\/\.git$/, '')
      .replace(/\.git$/, '');
  const u = new URL(location);
  const host = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname.toLowerCase())
    ? 'loopback'
    : u.hostname.toLowerCase();
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.protocol.toLowerCase()}//${host}:${port}${u.pathname.replace(/\/+$/, '').replace(/\.git$/, '')}`;
}
