// keystone: the agent's program. One error boundary maps failures to the exit codes of SPEC §9.
import { EventEmitter } from 'node:events';
import { ArtifactError } from '../artifacts/artifact-error.js';
import { OperationError } from '../core/errors.js';
import { StateDirError } from '../runtime/safe-path.js';
import { StateStoreError } from '../store/state-store.js';
import { TrustError } from '../trust/trust-error.js';
import { AGENT_USAGE, agentCommand } from './commands/agent.js';
import { FLOOR_USAGE, floorCommand } from './commands/floor.js';
import { EXIT, UsageError, type CliIo } from './io.js';

/** SIGINT and SIGTERM as one 'stop' event; tests pass their own emitter. */
function processSignals(): EventEmitter {
  const e = new EventEmitter();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => e.emit('stop'));
  return e;
}

const USAGE = `${AGENT_USAGE}\n       ${FLOOR_USAGE}`;

export async function main(argv: string[], io: CliIo, signals: { once(ev: 'stop', fn: () => void): void } = processSignals()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    io.stdout.write(`usage: ${USAGE}\n`);
    return name === undefined ? EXIT.BAD_INPUT : EXIT.OK;
  }
  if (name !== 'agent' && name !== 'floor') {
    io.stderr.write(`keystone: unknown command "${name}"\nusage: ${USAGE}\n`);
    return EXIT.BAD_INPUT;
  }
  const usage = name === 'agent' ? AGENT_USAGE : FLOOR_USAGE;
  try {
    return name === 'agent' ? await agentCommand(rest, io, signals) : await floorCommand(rest, io);
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr.write(`keystone ${name}: ${err.message}\nusage: ${usage}\n`);
      return EXIT.BAD_INPUT;
    }
    // A state directory another user could have written to is bad input (2); one another agent holds is a failed start (1).
    if (err instanceof StateDirError) {
      const unsafe = err.code === 'KS_STATE_DIR_UNSAFE';
      io.stderr.write(`keystone ${name}: ${unsafe ? 'refused: ' : ''}${err.message} [${err.code}]\n`);
      return unsafe ? EXIT.BAD_INPUT : EXIT.FAILED;
    }
    if (err instanceof TrustError || (err instanceof ArtifactError && err.code !== 'KS_ARTIFACT_FETCH_FAILED')) {
      io.stderr.write(`keystone ${name}: refused: ${err.message} [${err.code}]\n`);
      return EXIT.BAD_INPUT;
    }
    const coded = err instanceof OperationError || err instanceof StateStoreError;
    io.stderr.write(`keystone ${name}: ${coded ? `${err.message} [${err.code}]` : (err.stack ?? err.message)}\n`);
    return EXIT.FAILED;
  }
}
