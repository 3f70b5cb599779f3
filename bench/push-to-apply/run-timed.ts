// A program run to completion, timed: its stdout, wall ms and when it ended.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { BENCH_GIT_ENV } from '../lib/git-http-backend.js';
import { epochNow } from '../lib/stats.js';

/** Runs a program to completion: its stdout and wall ms; throws on a non-zero exit. */
export const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = BENCH_GIT_ENV) =>
  new Promise<{ stdout: string; wallMs: number; endedAt: number }>((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - t0;
      if (code !== 0) return reject(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${stderr}`));
      resolve({ stdout, wallMs, endedAt: epochNow() });
    });
  });
