// A `git http-backend` server in a child process of its own, counting what it serves, for the benches where many
// agents talk to one Git host (fleet, rollout). In its own process so that its CPU is measured apart from the bench's
// and the agents'. The bench asks over IPC for a mark (how many requests have arrived so far: records are appended on
// arrival, so a mark splits time) and for the records between two marks (src/dev/git-http-server.ts).
//
// Run as a child: `node bench/counted-git-server.mjs ROOT` (forkCountedGitServer does that).
import { fork, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { epochNow, sleep } from './harness.mjs';

const self = fileURLToPath(import.meta.url);

if (process.argv[1] === self && process.send) await serve(process.argv[2]);

async function serve(root) {
  const { GitHttpServer } = await import('../dist/dev/git-http-server.js');
  const git = new GitHttpServer({ root, port: 0 });
  await git.start();
  process.send({ port: git.port });
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m) => {
    if (m?.op === 'mark') process.send({ id: m.id, mark: git.requests.length });
    else if (m?.op === 'records') process.send({ id: m.id, records: git.requests.slice(m.from, m.to) });
    else if (m?.op === 'exit') void git.stop().then(() => process.exit(0));
  });
}

/**
 * Forks the server over the bare repositories under `root`. `port` resolves once it listens. A server that dies
 * midway fails the question asked (and so the run, whose clean-up then runs) rather than crashing the bench with an
 * unhandled 'error' and leaving the fleet behind.
 */
export function forkCountedGitServer(root) {
  const server = fork(self, [root], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = new Promise((resolve) => server.once('message', (m) => resolve(m.port)));
  let gone;
  server.on('error', (e) => (gone ??= e));
  server.once('exit', (code, signal) => (gone ??= new Error(`the Git server exited (${signal ?? code})`)));
  let nextId = 0;
  /** One IPC question to the server, its answer. */
  const ask = (msg) =>
    new Promise((resolve, reject) => {
      if (gone || !server.connected) return reject(gone ?? new Error('the Git server is gone'));
      const id = ++nextId;
      const on = (m) => {
        if (m?.id !== id) return;
        server.off('message', on);
        server.off('exit', exited);
        resolve(m);
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
    /** How many requests have arrived so far. */
    mark: async () => (await ask({ op: 'mark' })).mark,
    /** The request records between two marks. */
    records: async (from, to) => (await ask({ op: 'records', from, to })).records,
    /** Stops the server (5 s at the most). */
    async stop() {
      if (server.connected) server.send({ op: 'exit' });
      if (server.exitCode === null && server.signalCode === null) await Promise.race([new Promise((r) => server.once('exit', r)), sleep(5000)]);
    },
  };
}

/** Runs a program to completion: its stdout and when it ended; throws on a non-zero exit. */
export function runProgram(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve({ stdout, endedAt: epochNow() }) : reject(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${stderr}`))));
  });
}

/**
 * What a bench of many agents against one Git host starts with (fleet, rollout): programs to run (git with the
 * benches' environment, keystonectl), a work directory the components' user can reach, removed on a signal, the
 * machine's load and the others' CPU from now on, and the counted Git server over `work/srv`.
 */
export async function openFleetBench(name) {
  const h = await import('./harness.mjs');
  const run = (cmd, args, env = h.BENCH_GIT_ENV) => runProgram(cmd, args, env);
  const work = mkdtempSync(join(tmpdir(), `keystone-bench-${name}-`));
  // The components run as an unprivileged user, who must reach the programs under it.
  chmodSync(work, 0o755);
  const rmWork = () => rmSync(work, { recursive: true, force: true });
  h.cleanUpOnSignal(work, rmWork);
  return {
    run,
    git: (...args) => run('git', args),
    keystonectl: (...args) => run(process.execPath, [join(h.projectDir, 'bin', 'keystonectl.js'), ...args], process.env),
    work,
    rmWork,
    others: h.othersCpu(work),
    loadBefore: h.load1(),
    tStart: performance.now(),
    server: forkCountedGitServer(join(work, 'srv')),
  };
}
