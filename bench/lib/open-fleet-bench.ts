// What a bench of many agents against one Git host starts with (fleet, rollout).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { forkCountedGitServer } from './counted-git-server.js';
import { BENCH_GIT_ENV } from './git-http-backend.js';
import { load1, othersCpu } from './machine.js';
import { projectDir } from './paths.js';
import { cleanUpOnSignal } from './processes.js';
import { runProgram } from './run-program.js';

/**
 * What a bench of many agents against one Git host starts with (fleet, rollout): programs to run (git with the
 * benches' environment, keystonectl), a work directory the components' user can reach, removed on a signal, the
 * machine's load and the others' CPU from now on, and the counted Git server over `work/srv`.
 */
export async function openFleetBench(name: string) {
  const run = (cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = BENCH_GIT_ENV) =>
    runProgram(cmd, args, env);
  const work = mkdtempSync(join(tmpdir(), `keystone-bench-${name}-`));
  // The components run as an unprivileged user, who must reach the programs under it.
  chmodSync(work, 0o755);
  const rmWork = () => rmSync(work, { recursive: true, force: true });
  cleanUpOnSignal(work, rmWork);
  return {
    run,
    git: (...args: string[]) => run('git', args),
    keystonectl: (...args: string[]) =>
      run(process.execPath, [join(projectDir, 'bin', 'keystonectl.js'), ...args], process.env),
    work,
    rmWork,
    others: othersCpu(work),
    loadBefore: load1(),
    tStart: performance.now(),
    server: forkCountedGitServer(join(work, 'srv')),
  };
}

export type FleetBench = Awaited<ReturnType<typeof openFleetBench>>;
