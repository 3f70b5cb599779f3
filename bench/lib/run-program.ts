// A program run to completion, its stdout and when it ended.
import { spawn } from 'node:child_process';
import { epochNow } from './stats.js';

export interface ProgramResult {
  stdout: string;
  endedAt: number;
}

/** Runs a program to completion: its stdout and when it ended; throws on a non-zero exit. */
export function runProgram(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<ProgramResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve({ stdout, endedAt: epochNow() })
        : reject(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${stderr}`)),
    );
  });
}
