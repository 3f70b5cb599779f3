// keystone: the agent's program. The agent loop arrives with issue 4; until then it says so plainly.
import { EXIT, type CliIo } from './io.js';

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    io.stdout.write('usage: keystone agent (--repo URL|PATH | --dir PATH) --plan PLAN --trusted-key FILE [...]\n');
    return name === undefined ? EXIT.BAD_INPUT : EXIT.OK;
  }
  if (name === 'agent') {
    io.stderr.write('keystone agent: not available in this version yet; use `keystonectl apply-dry PLAN` to see what it would do\n');
    return EXIT.FAILED;
  }
  io.stderr.write(`keystone: unknown command "${name}"\n`);
  return EXIT.BAD_INPUT;
}
