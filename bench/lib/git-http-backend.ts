// Git for the benches: the git CLI's environment, and a `git http-backend` smart-HTTP server.
import type { GitHttpServer as GitHttpServerType } from '../../dist/dev/git-http-server.js';

/** The git CLI of the benches: no user or system configuration, a fixed identity. */
export const BENCH_GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@keystone.invalid',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@keystone.invalid',
};

/** What a served backend has answered so far. */
export interface BackendTotals {
  requests: number;
  bytesIn: number;
  bytesOut: number;
}

/**
 * `git http-backend` over every bare repository under `root`, on 127.0.0.1:`port` (0: any free port): the
 * development server of src/dev (the one the tests and `npm run git-server` use). Meant to run in a child process of
 * its own, so that its CPU is not counted against the client measured. `totals()` sums requests and body bytes.
 * Resolves with { server: { close(cb) }, port, totals }.
 */
export async function serveGitHttpBackend(
  root: string,
  port = 0,
): Promise<{ server: { close: (cb: () => void) => void }; port: number; totals: () => BackendTotals }> {
  const { GitHttpServer } = await import('../../dist/dev/git-http-server.js');
  const git: GitHttpServerType = new GitHttpServer({ root, port });
  await git.start();
  const totals = () => ({
    requests: git.requests.length,
    bytesIn: git.requests.reduce((n, r) => n + r.received, 0),
    bytesOut: git.requests.reduce((n, r) => n + r.bytes, 0),
  });
  return { server: { close: (cb) => void git.stop().then(cb) }, port: git.port, totals };
}
