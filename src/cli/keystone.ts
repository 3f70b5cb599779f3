// keystone: the agent's program. One error boundary maps failures to the exit codes of SPEC §9 (exitCodeOf).
// The commands are loaded when run (`import()`), so that the agent's start-up can set what V8 reads at run time before
// the bulk of its modules is compiled.
import { EventEmitter } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { ArtifactError } from '../artifacts/artifact-error.js';
import { exitCodeOf, OperationError } from '../core/errors.js';
import { IdentityError } from '../identity/identity-error.js';
import { StateDirError } from '../state-dir/safe-path.js';
import { TrustedFileError } from '../runtime/trusted-file.js';
import { StateStoreError } from '../store/state-store-error.js';
import { TrustError } from '../trust/trust-error.js';
import { AgentConfigError } from './agent-config-error.js';
import { asksForHelp } from './help-flag.js';
import { EXIT, UsageError, type CliIo } from './io.js';

/**
 * SIGINT and SIGTERM as one 'stop' event; tests pass their own emitter. The handlers stay installed after the first
 * signal: Ctrl-C under `npm start` delivers SIGINT twice (the terminal's to the group, npm's forward), and a second
 * signal must not kill the agent in the middle of its orderly stop.
 */
function processSignals(): EventEmitter {
  const e = new EventEmitter();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => e.emit('stop'));
  return e;
}

export const COMMANDS = ['agent', 'init', 'doctor', 'identity', 'floor'] as const;
type CommandName = (typeof COMMANDS)[number];
const isCommand = (name: string): name is CommandName => (COMMANDS as readonly string[]).includes(name);

export async function usageOf(name: CommandName): Promise<string> {
  switch (name) {
    case 'agent':
      return (await import('./commands/agent.js')).AGENT_USAGE;
    case 'init':
      return (await import('./commands/init.js')).INIT_USAGE;
    case 'doctor':
      return (await import('./commands/doctor.js')).DOCTOR_USAGE;
    case 'identity':
      return (await import('./commands/identity.js')).IDENTITY_USAGE;
    case 'floor':
      return (await import('./commands/floor.js')).FLOOR_USAGE;
  }
}
const allUsage = async () =>
  (await Promise.all(COMMANDS.map(usageOf))).join('\n       ') + '\n       keystone --version';

/**
 * The agent is a long-lived daemon on small devices: V8's young generation (1 MiB semi-spaces at start) is kept from
 * growing towards its 16 MiB default, which saved ~20-30 MiB of RSS with 50 components (bench/footprint.bench.ts) for
 * a few more, cheap, scavenges. `--semi-space-growth-factor` is read at each scavenge, so it works when set at run time
 * (--max-semi-space-size is read only at start). Newer V8 versions hold the factor at 2 or more (a minimum implied
 * on the flag), so there it changes nothing: docs/agent.md (Memory) tells Node 22/24 users to pass --max-semi-space-size=1 in
 * NODE_OPTIONS. Left alone when node was given a semi-space flag of its own, or with KEYSTONE_V8_DEFAULTS=1.
 */
export function keepYoungGenerationSmall(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[] = process.execArgv,
): boolean {
  if (env.KEYSTONE_V8_DEFAULTS === '1') return false;
  if ([...execArgv, env.NODE_OPTIONS ?? ''].some((a) => a.includes('semi-space') || a.includes('semi_space')))
    return false;
  setFlagsFromString('--semi-space-growth-factor=1');
  return true;
}

export async function main(
  argv: string[],
  io: CliIo,
  signals: { once(ev: 'stop', fn: () => void): void } = processSignals(),
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    io.stdout.write(`usage: ${await allUsage()}\n`);
    return name === undefined ? EXIT.BAD_INPUT : EXIT.OK;
  }
  if (name === '--version' || name === '-V') {
    io.stdout.write(`keystone ${(await import('../package-manifest.js')).packageVersion()}\n`);
    return EXIT.OK;
  }
  if (!isCommand(name)) {
    io.stderr.write(`keystone: unknown command "${name}"\nusage: ${await allUsage()}\n`);
    return EXIT.BAD_INPUT;
  }
  // `keystone agent --help`: that command's usage, asked for, so on stdout and exit 0 (no agent started, no file read).
  if (asksForHelp(rest)) {
    io.stdout.write(`usage: ${await usageOf(name)}\n`);
    return EXIT.OK;
  }
  try {
    if (name === 'agent') {
      keepYoungGenerationSmall(io.env);
      return await (await import('./commands/agent.js')).agentCommand(rest, io, signals);
    }
    if (name === 'init') return await (await import('./commands/init.js')).initCommand(rest, io);
    if (name === 'doctor') return await (await import('./commands/doctor.js')).doctorCommand(rest, io);
    if (name === 'identity') return await (await import('./commands/identity.js')).identityCommand(rest, io);
    return await (await import('./commands/floor.js')).floorCommand(rest, io);
  } catch (e) {
    // The exit code is the error's (exitCodeOf: the error catalogue's); what is written depends on what it is.
    const err = e as Error & { code?: string };
    const exit = exitCodeOf(err);
    if (err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) {
      const code = err instanceof UsageError && err.code !== 'KS_USAGE' ? ` [${err.code}]` : '';
      io.stderr.write(`keystone ${name}: ${err.message}${code}\nusage: ${await usageOf(name)}\n`);
    } else if (err instanceof AgentConfigError) {
      // A configuration file that does not validate is bad input, told like a bad recipe: every problem with its line.
      io.stderr.write(`keystone ${name}: ${err.message}\n`);
    } else if (err instanceof StateDirError) {
      // A state directory another user could have written to is bad input (2); one another agent holds is a failed start (1).
      io.stderr.write(`keystone ${name}: ${exit === EXIT.BAD_INPUT ? 'refused: ' : ''}${err.message} [${err.code}]\n`);
    } else if (
      err instanceof TrustError ||
      err instanceof TrustedFileError ||
      err instanceof IdentityError ||
      (err instanceof ArtifactError && exit === EXIT.BAD_INPUT)
    ) {
      // The device's keys unsafe, unreadable or gone: the agent does not start, and says which file and the fix.
      io.stderr.write(`keystone ${name}: refused: ${err.message} [${err.code}]\n`);
    } else {
      const coded = err instanceof OperationError || err instanceof StateStoreError;
      io.stderr.write(`keystone ${name}: ${coded ? `${err.message} [${err.code}]` : (err.stack ?? err.message)}\n`);
    }
    return exit;
  }
}
