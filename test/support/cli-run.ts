// Runs keystonectl in-process with captured output, the way a test wants to see a command.
import { main } from '../../src/cli/keystonectl.js';
import type { CliIo } from '../../src/cli/io.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCtl(args: string[], cwd: string, extra: Partial<CliIo> = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd,
    env: {},
    ...extra,
  });
  return { code, stdout, stderr };
}
