// A `git http-backend` server in a child process of its own, counting what it serves, for the benches where many
// agents talk to one Git host (fleet, rollout). In its own process so that its CPU is measured apart from the bench's
// and the agents'. The bench asks over IPC for a mark (how many requests have arrived so far: records are appended on
// arrival, so a mark splits time) and for the records between two marks (src/dev/git-http-server.ts).
//
// Run as a child: `node --import tsx bench/lib/counted-git-server.ts ROOT` (forkCountedGitServer does that).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ServedRequest } from '../../dist/dev/git-http-server.js';
import { sleep } from './stats.js';

const self = fileURLToPath(import.meta.url);

type Question = { op: 'mark' } | { op: 'records'; from: number; to: number } | { op: 'exit' };
type Answer = { port: number } | { id: number; mark: number } | { id: number; records: ServedRequest[] };

if (process.argv[1] === self && process.send) await serve(process.argv[2]!);

async function serve(root: string): Promise<void> {
  const { GitHttpServer } = await import('../../dist/dev/git-http-server.js');
  const git = new GitHttpServer({ root, port: 0 });
  await git.start();
  const send = (a: Answer) => process.send!(a);
  send({ port: git.port });
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m: (Question & { id: number }) | undefined) => {
    if (m?.op === 'mark') send({ id: m.id, mark: git.requests.length });
    else if (m?.op === 'records') send({ id: m.id, records: git.requests.slice(m.from, m.to) });
    else if (m?.op === 'exit') void git.stop().then(() => process.exit(0));
  });
}

/** The counted server as the bench sees it. */
export interface CountedGitServer {
  pid: number | undefined;
  port: Promise<number>;
  /** How many requests have arrived so far. */
  mark(): Promise<number>;
  /** The request records between two marks. */
  records(from: number, to: number): Promise<ServedRequest[]>;
  /** Stops the server (5 s at the most). */
  stop(): Promise<void>;
}

/**
 * Forks the server over the bare repositories under `root`. `port` resolves once it listens. A server that dies
 * midway fails the question asked (and so the run, whose clean-up then runs) rather than crashing the bench with an
 * unhandled 'error' and leaving the fleet behind.
 */
export function forkCountedGitServer(root: string): CountedGitServer {
  const server = fork(self, [root], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = new Promise<number>((resolve) => server.once('message', (m: { port: number }) => resolve(m.port)));
  let gone: Error | undefined;
  server.on('error', (e) => (gone ??= e));
  server.once('exit', (code, signal) => (gone ??= new Error(`the Git server exited (${signal ?? code})`)));
  let nextId = 0;
  /** One IPC question to the server, its answer. */
  const ask = <A>(msg: Question): Promise<A> =>
    new Promise((resolve, reject) => {
      if (gone || !server.connected) return reject(gone ?? new Error('the Git server is gone'));
      const id = ++nextId;
      const on = (m: { id?: number }) => {
        if (m?.id !== id) return;
        server.off('message', on);
        server.off('exit', exited);
        resolve(m as A);
      };
      const exited = () => {
        server.off('message', on);
        reject(gone ?? new Error('the Git server exited'));
      };
      server.on('message', on);
      server.once('exit', exited);
      server.send({ ...msg, id }, (e) => e && exited());
    });
  return {
    pid: server.pid,
    port,
    mark: async () => (await ask<{ mark: number }>({ op: 'mark' })).mark,
    records: async (from, to) => (await ask<{ records: ServedRequest[] }>({ op: 'records', from, to })).records,
    async stop() {
      if (server.connected) server.send({ op: 'exit' });
      if (server.exitCode === null && server.signalCode === null)
        await Promise.race([new Promise((r) => server.once('exit', r)), sleep(5000)]);
    },
  };
}
