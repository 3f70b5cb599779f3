// The tests' Git smart-HTTP server is the development one (src/dev/), so docs/gitops.md's walkthrough and the tests
// serve repositories the same way.
export * from '../../src/dev/git-http-server.js';

import type { GitHttpServer } from '../../src/dev/git-http-server.js';

/** The requests `server` saw during `fn`, and what fn returned. */
export async function servedDuring<T>(server: GitHttpServer, fn: () => Promise<T>) {
  const from = server.requests.length;
  const value = await fn();
  return { value, reqs: server.requests.slice(from) };
}
