// `keystonectl secret set|ls|rm|rekey|rewrap`: the secrets of the repository (SPEC §16), encrypted to fleet targets.
import { EXIT, UsageError, type CliIo } from '../io.js';
import { TRUST_USAGE } from '../trust-args.js';
import { secretLs } from './secret-ls.js';
import { secretRekey, secretRewrap } from './secret-rekey.js';
import { secretRm } from './secret-rm.js';
import { secretSet } from './secret-set.js';

export const SECRET_USAGE =
  `keystonectl secret set NAME --target T [--target T…] [--file F] [--binary] [--enrollment-key PUB…] [--identity FILE] ${TRUST_USAGE} [--repo DIR] [--json]   (the value: --file or stdin)\n` +
  '      keystonectl secret ls [--identity FILE] [--repo DIR] [--json]\n' +
  '      keystonectl secret rm NAME [--repo DIR] [--json]\n' +
  `      keystonectl secret rekey --target T --enrollment-key PUB [--enrollment-key PUB…] [--identity FILE] ${TRUST_USAGE} [--repo DIR] [--json]\n` +
  `      keystonectl secret rewrap --target T --enrollment-key PUB [--enrollment-key PUB…] [--identity FILE] ${TRUST_USAGE} [--repo DIR] [--json]`;

export const SECRET_HELP = `${SECRET_USAGE}

Secrets are age files in the repository, signed with the recipes (keystonectl sign lists secrets/**):
  secrets/NAME.age            a secret, encrypted to the recipient of each target that reads it
  secrets/recipients/T.txt    target T's recipient (age -R secrets/recipients/T.txt encrypts for T's devices)
  secrets/keys/T.age          target T's key, encrypted to T's enrolled devices and to the operators
  secrets/operators.txt       the operators' age recipients (one age1… a line): they rekey and list

  set NAME --target T   encrypts the value (from --file F, else stdin; never an argument, never printed) to each
                        target. A target without a key gets one, wrapped to its devices: those whose certificate
                        (devices/NAME.cert) verifies with --enrollment-key, is not revoked, and whose vouched labels
                        (or name) put it in T, as fleet.toml picks a device's target. --binary: not armored.
                        Refused when secrets/recipients/T.txt is not the signed file (a swapped recipient would
                        receive the secret; a key made since the last signature is used once signed); with
                        --identity, the recipient is also checked against the key itself.
  ls                    every secret: size, format, the targets that read it (needs --identity) and their devices,
                        the recipes and plans that use it; secrets they use that are missing; the targets.
  rm NAME               removes secrets/NAME.age; warns when a recipe or plan still uses it.
  rekey --target T      after an enrolment or a revocation: a new key for T wrapped to its current devices, and every
                        secret of T re-encrypted (to T and the other targets it was for). Needs --identity: an age
                        identity that opens secrets/keys/T.age (its recipient was in secrets/operators.txt when the
                        key was made). Refused when a secret is also for a recipient the identity cannot tell apart.
  rewrap --target T     after an enrolment: the same key of T wrapped to its current devices (one file rewritten, no
                        secret re-encrypted). Needs --identity as rekey does. Refused when a device would lose the key
                        (revoked, re-labelled): it knows it already, so only a rekey cuts it off.

  --identity FILE       the operator's age identity (age-keygen -o FILE), else the file KEYSTONE_AGE_IDENTITY names.
  --trusted-key FILE    set, rekey and rewrap verify SHA256SUMS.minisig first, as apply-dry does (--threshold K,
                        --max-age, --require-ref too), and refuse to go on unless every file they rely on is exactly
                        the signed one: fleet.toml and devices/revoked.toml (who reads), secrets/operators.txt,
                        secrets/recipients/T.txt, and for rekey and rewrap secrets/keys/T.age. Sign those first
                        (review git diff; keystonectl sign). --allow-unsigned takes them as they are (development).

Then sign (keystonectl sign) and commit: devices refuse a secrets/ file SHA256SUMS does not list.
Exit codes: 0 done, 2 bad input or refused (a code such as KS_SECRET_OPERATOR says why), 1 another failure.`;

const SUBCOMMANDS: Record<string, (argv: string[], io: CliIo) => Promise<number>> = {
  set: secretSet,
  ls: secretLs,
  rm: secretRm,
  rekey: secretRekey,
  rewrap: secretRewrap,
};

export async function secret(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h' || sub === 'help' || rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(SECRET_HELP + '\n');
    return EXIT.OK;
  }
  const run = sub !== undefined && Object.hasOwn(SUBCOMMANDS, sub) ? SUBCOMMANDS[sub]! : undefined;
  if (!run)
    throw new UsageError(
      sub === undefined
        ? 'secret needs a subcommand: set, ls, rm, rekey or rewrap'
        : `unknown secret subcommand "${sub}" (there are: set, ls, rm, rekey, rewrap)`,
    );
  return run(rest, io);
}
