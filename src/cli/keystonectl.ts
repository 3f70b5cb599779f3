// keystonectl: the operator's command line. One error boundary maps every failure to the exit codes of SPEC §9 (exitCodeOf).
import { ArtifactError } from '../artifacts/artifact-error.js';
import { exitCodeOf, InvalidRevisionError, OperationError } from '../core/errors.js';
import { TrustError } from '../trust/trust-error.js';
import { IdentityError } from '../identity/identity-error.js';
import { SecretError } from '../secrets/secret-error.js';
import { asksForHelp } from './help-flag.js';
import { EXIT, UsageError, type CliIo } from './io.js';
import { packageVersion } from '../package-manifest.js';

type Command = (argv: string[], io: CliIo) => Promise<number>;
/** `help`: a command's longer text for `--help` (it starts with the usage), where it has one. */
type Loaded = { run: Command; usage: string; help?: string };

/**
 * Each command's module is loaded when it runs (`import()`), not all of them at every start: `keystonectl status`
 * reads the agent client and its table, not the planner, the signer, Git and age (its cold start, bench/footprint.bench.ts).
 * The usage text loads them all.
 */
export const COMMANDS: Readonly<Record<string, { load: () => Promise<Loaded>; summary: string }>> = {
  'apply-dry': {
    load: () => import('./commands/apply-dry.js').then((m) => ({ run: m.applyDry, usage: m.APPLY_DRY_USAGE })),
    summary: 'validate a plan (or, with --fleet, every fleet target) and print what applying it would stop and start',
  },
  apply: {
    load: () => import('./commands/apply.js').then((m) => ({ run: m.apply, usage: m.APPLY_USAGE })),
    summary: 'hand a verified plan to the local agent and follow it until the device converged',
  },
  graph: {
    load: () => import('./commands/graph.js').then((m) => ({ run: m.graph, usage: m.GRAPH_USAGE })),
    summary: 'print the resolved dependency layers and orders',
  },
  keygen: {
    load: () => import('./commands/keygen.js').then((m) => ({ run: m.keygen, usage: m.KEYGEN_USAGE })),
    summary: 'make a minisign-compatible key pair',
  },
  sign: {
    load: () => import('./commands/sign.js').then((m) => ({ run: m.sign, usage: m.SIGN_USAGE })),
    summary: 'write SHA256SUMS over every recipe, plan, fleet.toml and secrets/ file, and sign it',
  },
  enroll: {
    load: () => import('./commands/enroll.js').then((m) => ({ run: m.enroll, usage: m.ENROLL_USAGE })),
    summary: "sign a device's certificate (devices/NAME.cert) with the enrolment key; --check verifies one",
  },
  secret: {
    load: () =>
      import('./commands/secret.js').then((m) => ({ run: m.secret, usage: m.SECRET_USAGE, help: m.SECRET_HELP })),
    summary: 'set, list, remove and rekey the secrets a fleet target reads (secrets/NAME.age)',
  },
  verify: {
    load: () => import('./commands/verify.js').then((m) => ({ run: m.verify, usage: m.VERIFY_USAGE })),
    summary: "check the repository's signature and digests",
  },
  status: {
    load: () => import('./commands/status.js').then((m) => ({ run: m.status, usage: m.STATUS_USAGE })),
    summary: 'the applied revision and every component, from the running agent',
  },
  restart: {
    load: () => import('./commands/restart.js').then((m) => ({ run: m.restart, usage: m.RESTART_USAGE })),
    summary: 'restart a component and its hard dependents, and wait for them',
  },
  stop: {
    load: () => import('./commands/stop.js').then((m) => ({ run: m.stop, usage: m.STOP_USAGE })),
    summary: 'stop a component (its hard dependents first) and hold it stopped',
  },
  start: {
    load: () => import('./commands/start.js').then((m) => ({ run: m.start, usage: m.START_USAGE })),
    summary: 'start a component once its dependencies are healthy',
  },
  logs: {
    load: () => import('./commands/logs.js').then((m) => ({ run: m.logs, usage: m.LOGS_USAGE })),
    summary: "print (and follow) a component's stdout or stderr",
  },
  history: {
    load: () => import('./commands/history.js').then((m) => ({ run: m.history, usage: m.HISTORY_USAGE })),
    summary: "the agent's applies, newest first",
  },
  fleet: {
    load: () =>
      Promise.all([import('./commands/fleet.js'), import('./commands/fleet-help.js')]).then(([m, h]) => ({
        run: m.fleet,
        usage: h.FLEET_USAGE,
        help: h.FLEET_HELP,
      })),
    summary: "the fleet's reports for a commit, per target (needs git for a remote)",
  },
  resume: {
    load: () => import('./commands/resume.js').then((m) => ({ run: m.resume, usage: m.RESUME_USAGE })),
    summary: 'follow Git again after a forced manual apply suspended the sync',
  },
  sync: {
    load: () => import('./commands/sync.js').then((m) => ({ run: m.sync, usage: m.SYNC_USAGE })),
    summary: 'the agent looks at its source now; waits for what became of it (applied, held, rejected)',
  },
};

async function usage(): Promise<string> {
  const rows = await Promise.all(
    Object.entries(COMMANDS).map(
      async ([name, c]) => `  ${name.padEnd(10)} ${c.summary}\n      ${(await c.load()).usage}`,
    ),
  );
  return `usage: keystonectl <command> [options]\n       keystonectl --version\n\ncommands:\n${rows.join('\n')}\n\nexit codes: 0 ok, 1 the operation failed, 2 bad input (invalid, unsigned, untrusted)\n`;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(await usage());
    return name === undefined ? EXIT.BAD_INPUT : EXIT.OK;
  }
  if (name === '--version' || name === '-V') {
    // As `keystone --version`: the package's version, read from package.json beside dist/.
    io.stdout.write(`keystonectl ${packageVersion()}\n`);
    return EXIT.OK;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr.write(`keystonectl: unknown command "${name}"\n\n${await usage()}`);
    return EXIT.BAD_INPUT;
  }
  let loaded: Loaded | undefined;
  try {
    loaded = await command.load();
    // `keystonectl status --help`, `fleet status -h`: the command's usage, asked for, so on stdout and exit 0.
    if (asksForHelp(rest)) {
      io.stdout.write(loaded.help !== undefined ? `${loaded.help}\n` : `usage: ${loaded.usage}\n`);
      return EXIT.OK;
    }
    return await loaded.run(rest, io);
  } catch (e) {
    // The exit code is the error's (exitCodeOf: the error catalogue's); what is written depends on what it is.
    const err = e as Error & { code?: string };
    const exit = exitCodeOf(err);
    if (err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr.write(`keystonectl ${name}: ${err.message}\nusage: ${(loaded ?? (await command.load())).usage}\n`);
    } else if (err instanceof TrustError) {
      // Refused as a whole: say which file, which key, which check, as data too when --json was asked for.
      const where = [err.file && `file ${err.file}`, err.keyId && `key ${err.keyId}`].filter(Boolean).join(', ');
      if (rest.includes('--json'))
        io.stdout.write(
          JSON.stringify(
            { error: { code: err.code, message: err.message, file: err.file, keyId: err.keyId } },
            null,
            2,
          ) + '\n',
        );
      io.stderr.write(`keystonectl ${name}: refused: ${err.message}${where ? ` (${where})` : ''} [${err.code}]\n`);
    } else if (err instanceof IdentityError) {
      // A certificate, a key or devices/revoked.toml refused: bad input, named with its file and code.
      if (rest.includes('--json'))
        io.stdout.write(
          JSON.stringify({ error: { code: err.code, message: err.message, file: err.file } }, null, 2) + '\n',
        );
      io.stderr.write(`keystonectl ${name}: refused: ${err.message} [${err.code}]\n`);
    } else if (err instanceof SecretError) {
      // A secret refused (a swapped recipient, no identity that opens the key): bad input, never with a value in it.
      if (rest.includes('--json'))
        io.stdout.write(
          JSON.stringify(
            { error: { code: err.code, message: err.message, file: err.file ?? null, secret: err.secret ?? null } },
            null,
            2,
          ) + '\n',
        );
      io.stderr.write(`keystonectl ${name}: refused: ${err.message} [${err.code}]\n`);
    } else if (err instanceof ArtifactError || err instanceof OperationError) {
      // A bad digest or archive is untrusted input (2); a server that does not answer is a failed operation (1).
      io.stderr.write(`keystonectl ${name}: ${err.message} [${err.code}]\n`);
    } else if (err instanceof InvalidRevisionError) {
      io.stderr.write(`keystonectl ${name}: ${err.message}\n`);
    } else {
      io.stderr.write(`keystonectl ${name}: unexpected failure: ${err.stack ?? err.message}\n`);
    }
    return exit;
  }
}
