// `keystone identity`: the device's name and the public halves of its keys (SPEC §15), what an operator carries to
// `keystonectl enroll`. Read without starting the agent and beside a running one; a device that has no keys yet gets
// them, as its first start would, so that it can be enrolled before it ever runs. The secret halves are never printed.
import { resolve } from 'node:path';
import { checkStateDir } from '../../agent/state-dir.js';
import { ensureDeviceKeys, identityPaths, publicOf, readDevicePublicIdentity } from '../../identity/device-keys.js';
import { parseOptionsBesideAgent } from '../agent-options.js';
import { deviceName } from '../agent-settings.js';
import { EXIT, nowMs, random, UsageError, type CliIo } from '../io.js';

export const IDENTITY_USAGE =
  'keystone identity [--json] [--config FILE] [--state-dir DIR] [--device NAME]   (no --config: /etc/keystone/agent.toml when it exists)';

export async function identityCommand(argv: string[], io: CliIo): Promise<number> {
  // --json is this command's own; the rest is read as the agent reads it (its configuration file included), so that
  // the name and the state directory are the ones the agent runs with.
  const json = argv.includes('--json');
  const { values, positionals } = parseOptionsBesideAgent(
    argv.filter((a) => a !== '--json'),
    io,
  );
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const device = deviceName(values);
  const stateDir = resolve(io.cwd, values['state-dir']);
  // Read first, writing nothing: the usual case (the keys exist) needs no write access and no lock.
  let identity = await readDevicePublicIdentity(stateDir);
  let created = false;
  if (identity === undefined) {
    // As the agent's first start: the state directory made (0711) and checked whole before anything is put in it.
    checkStateDir(stateDir);
    const made = await ensureDeviceKeys(stateDir, { now: () => nowMs(io), randomBytes: random(io), create: true });
    identity = publicOf(made.keys);
    created = made.created;
  }
  if (created) io.stderr.write(`created the device's keys in ${identityPaths(stateDir).dir}\n`);
  if (json) {
    io.stdout.write(
      JSON.stringify({
        device,
        reportKey: identity.reportKey,
        reportKeyId: identity.reportKeyId,
        ageRecipient: identity.ageRecipient,
      }) + '\n',
    );
    return EXIT.OK;
  }
  io.stdout.write(
    `device         ${device}\n` +
      `report key     ${identity.reportKey}   (id ${identity.reportKeyId})\n` +
      `age recipient  ${identity.ageRecipient}\n` +
      `enrol it: keystone identity --json > ${device}.identity.json, then on the operator's machine\n` +
      `          keystonectl enroll --key ENROLL.key --identity ${device}.identity.json\n`,
  );
  return EXIT.OK;
}
