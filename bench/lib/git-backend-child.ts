// `git http-backend` (serveGitHttpBackend) in a child process of its own, so that its CPU is not counted against the
// client measured (git-sync, push-to-apply). The child sends { port } once it listens, answers 'stats' with
// { totals }, closes on 'exit', and exits with the bench (the IPC channel gone: Ctrl-C, a crash).
//
// Run as a child: `node --import tsx bench/lib/git-backend-child.ts ROOT` (forkGitBackend does that).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveGitHttpBackend, type BackendTotals } from './git-http-backend.js';

const self = fileURLToPath(import.meta.url);

/** What the child sends: its port first, then the totals asked for with 'stats'. */
export type BackendMessage = { port: number } | { totals: BackendTotals };

if (process.argv[1] === self && process.send) await serve(process.argv[2]!);

/** `git http-backend` over every bare repository under `root`; reports its port, then answers 'stats' with totals. */
async function serve(root: string): Promise<void> {
  const { server, port, totals: sum } = await serveGitHttpBackend(root);
  const send = (m: BackendMessage) => process.send!(m);
  send({ port });
  // The bench gone (Ctrl-C, a crash) means the server goes too.
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m) => {
    if (m === 'stats') send({ totals: sum() });
    if (m === 'exit') server.close(() => process.exit(0));
  });
}

/** Forks the server over the bare repositories under `root` (its messages: BackendMessage). */
export function forkGitBackend(root: string): ChildProcess {
  return fork(self, [root], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}
