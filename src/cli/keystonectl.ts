// keystonectl: the operator's command line. One error boundary maps every failure to the exit codes of SPEC §9.
import { ArtifactError } from '../artifacts/artifact-error.js';
import { InvalidRevisionError, OperationError } from '../core/errors.js';
import { APPLY_USAGE, apply } from './commands/apply.js';
import { APPLY_DRY_USAGE, applyDry } from './commands/apply-dry.js';
import { ENROLL_USAGE, enroll } from './commands/enroll.js';
import { FLEET_USAGE, fleet } from './commands/fleet.js';
import { GRAPH_USAGE, graph } from './commands/graph.js';
import { HISTORY_USAGE, history } from './commands/history.js';
import { KEYGEN_USAGE, keygen } from './commands/keygen.js';
import { LOGS_USAGE, logs } from './commands/logs.js';
import { RESTART_USAGE, restart } from './commands/restart.js';
import { RESUME_USAGE, resume } from './commands/resume.js';
import { SECRET_USAGE, secret } from './commands/secret.js';
import { SIGN_USAGE, sign } from './commands/sign.js';
import { START_USAGE, start } from './commands/start.js';
import { STATUS_USAGE, status } from './commands/status.js';
import { STOP_USAGE, stop } from './commands/stop.js';
import { SYNC_USAGE, sync } from './commands/sync.js';
import { VERIFY_USAGE, verify } from './commands/verify.js';
import { TrustError } from '../trust/trust-error.js';
import { IdentityError } from '../identity/identity-error.js';
import { SecretError } from '../secrets/secret-error.js';
import { EXIT, UsageError, type CliIo } from './io.js';
import { packageVersion } from './version.js';

type Command = (argv: string[], io: CliIo) => Promise<number>;

const COMMANDS: Record<string, { run: Command; usage: string; summary: string }> = {
  'apply-dry': { run: applyDry, usage: APPLY_DRY_USAGE, summary: 'validate a plan (or, with --fleet, every fleet target) and print what applying it would stop and start' },
  apply: { run: apply, usage: APPLY_USAGE, summary: 'hand a verified plan to the local agent and follow it until the device converged' },
  graph: { run: graph, usage: GRAPH_USAGE, summary: 'print the resolved dependency layers and orders' },
  keygen: { run: keygen, usage: KEYGEN_USAGE, summary: 'make a minisign-compatible key pair' },
  sign: { run: sign, usage: SIGN_USAGE, summary: 'write SHA256SUMS over every recipe, plan, fleet.toml and secrets/ file, and sign it' },
  enroll: { run: enroll, usage: ENROLL_USAGE, summary: "sign a device's certificate (devices/NAME.cert) with the enrolment key; --check verifies one" },
  secret: { run: secret, usage: SECRET_USAGE, summary: 'set, list, remove and rekey the secrets a fleet target reads (secrets/NAME.age)' },
  verify: { run: verify, usage: VERIFY_USAGE, summary: "check the repository's signature and digests" },
  status: { run: status, usage: STATUS_USAGE, summary: 'the applied revision and every component, from the running agent' },
  restart: { run: restart, usage: RESTART_USAGE, summary: 'restart a component and its hard dependents, and wait for them' },
  stop: { run: stop, usage: STOP_USAGE, summary: 'stop a component (its hard dependents first) and hold it stopped' },
  start: { run: start, usage: START_USAGE, summary: 'start a component once its dependencies are healthy' },
  logs: { run: logs, usage: LOGS_USAGE, summary: "print (and follow) a component's stdout or stderr" },
  history: { run: history, usage: HISTORY_USAGE, summary: "the agent's applies, newest first" },
  fleet: { run: fleet, usage: FLEET_USAGE, summary: "the fleet's reports for a commit, per target (needs git for a remote)" },
  resume: { run: resume, usage: RESUME_USAGE, summary: 'follow Git again after a forced manual apply suspended the sync' },
  sync: { run: sync, usage: SYNC_USAGE, summary: 'the agent looks at its source now; waits for what became of it (applied, held, rejected)' },
};

function usage(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}\n      ${c.usage}`);
  return `usage: keystonectl <command> [options]\n       keystonectl --version\n\ncommands:\n${rows.join('\n')}\n\nexit codes: 0 ok, 1 the operation failed, 2 bad input (invalid, unsigned, untrusted)\n`;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(usage());
    return name === undefined ? EXIT.BAD_INPUT : EXIT.OK;
  }
  if (name === '--version' || name === '-V') {
    // As `keystone --version`: the package's version, read from package.json beside dist/.
    io.stdout.write(`keystonectl ${packageVersion()}\n`);
    return EXIT.OK;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr.write(`keystonectl: unknown command "${name}"\n\n${usage()}`);
    return EXIT.BAD_INPUT;
  }
  try {
    return await command.run(rest, io);
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr.write(`keystonectl ${name}: ${err.message}\nusage: ${command.usage}\n`);
      return EXIT.BAD_INPUT;
    }
    if (err instanceof TrustError) {
      // Refused as a whole: say which file, which key, which check, as data too when --json was asked for.
      const where = [err.file && `file ${err.file}`, err.keyId && `key ${err.keyId}`].filter(Boolean).join(', ');
      if (rest.includes('--json')) io.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message, file: err.file, keyId: err.keyId } }, null, 2) + '\n');
      io.stderr.write(`keystonectl ${name}: refused: ${err.message}${where ? ` (${where})` : ''} [${err.code}]\n`);
      return EXIT.BAD_INPUT;
    }
    if (err instanceof IdentityError) {
      // A certificate, a key or devices/revoked.toml refused: bad input, named with its file and code.
      if (rest.includes('--json')) io.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message, file: err.file } }, null, 2) + '\n');
      io.stderr.write(`keystonectl ${name}: refused: ${err.message} [${err.code}]\n`);
      return EXIT.BAD_INPUT;
    }
    if (err instanceof SecretError) {
      // A secret refused (a swapped recipient, no identity that opens the key): bad input, never with a value in it.
      if (rest.includes('--json')) io.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message, file: err.file ?? null, secret: err.secret ?? null } }, null, 2) + '\n');
      io.stderr.write(`keystonectl ${name}: refused: ${err.message} [${err.code}]\n`);
      return EXIT.BAD_INPUT;
    }
    if (err instanceof ArtifactError) {
      // A bad digest or archive is untrusted input (2); a server that does not answer is a failed operation (1).
      io.stderr.write(`keystonectl ${name}: ${err.message} [${err.code}]\n`);
      return err.code === 'KS_ARTIFACT_FETCH_FAILED' ? EXIT.FAILED : EXIT.BAD_INPUT;
    }
    if (err instanceof InvalidRevisionError) {
      io.stderr.write(`keystonectl ${name}: ${err.message}\n`);
      return EXIT.BAD_INPUT;
    }
    if (err instanceof OperationError) {
      io.stderr.write(`keystonectl ${name}: ${err.message} [${err.code}]\n`);
      return EXIT.FAILED;
    }
    io.stderr.write(`keystonectl ${name}: unexpected failure: ${err.stack ?? err.message}\n`);
    return EXIT.FAILED;
  }
}
