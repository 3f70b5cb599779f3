// `keystonectl secret set|rekey|rewrap` and the signature (SPEC §6, §16). What these commands take from the checkout
// decides who will read a secret — which devices a target takes (fleet.toml), which are revoked (devices/revoked.toml),
// who operates (secrets/operators.txt), a target's recipient and key — and anyone who can push may edit those files,
// and SHA256SUMS beside them. So the signature over SHA256SUMS is verified first, with the flags apply-dry and verify
// take, and each file a command relies on must then be exactly the signed one (SecretsRepo.readSigned). Only those:
// the secrets themselves (secrets/NAME.age) change between a `secret set` and the next `sign`.
import type { SecretsRepo } from '../secrets/secrets-repo.js';
import { DirectoryReader } from '../source/directory-reader.js';
import { TrustError } from '../trust/trust-error.js';
import { verifyRevision } from '../trust/verify-revision.js';
import { nowMs, type CliIo } from './io.js';
import { trustSetting, type TrustValues } from './trust-args.js';

/** What to do when the checkout was never signed: sign what the secret commands rely on first. */
const SIGN_FIRST =
  "the secret commands take fleet.toml, devices/revoked.toml, secrets/operators.txt and the targets' files only as signed: " +
  'review and sign them first (keystonectl sign --key KEY), then run this again, or give --allow-unsigned (development only)';

/**
 * Fails closed: neither --trusted-key nor --allow-unsigned is a usage error (trustSetting). With a trusted key, the
 * signature is verified (a refusal is a TrustError: exit 2) and `repo` checks every file the command relies on against
 * the signed sums from then on; with --allow-unsigned, nothing is checked and stderr says so loudly.
 */
export async function verifySecretInputs(
  repo: SecretsRepo,
  values: TrustValues,
  io: CliIo,
  command: string,
): Promise<void> {
  const setting = trustSetting(values, io);
  if (setting.unsigned) {
    io.stderr.write(
      `keystonectl secret ${command}: WARNING: UNSIGNED (--allow-unsigned): SHA256SUMS's signature is not checked, so fleet.toml, devices/revoked.toml, ` +
        `secrets/operators.txt and the targets' recipients and keys are taken as this checkout has them: whoever can push to it decides who reads your secrets (development only)\n`,
    );
    return;
  }
  let sums;
  try {
    ({ sums } = await verifyRevision(new DirectoryReader(repo.root), {
      keyring: setting.keyring,
      now: Math.floor(nowMs(io) / 1000),
      ...(setting.maxAgeSeconds !== undefined && { maxAgeSeconds: setting.maxAgeSeconds }),
      ...(setting.maxClockSkewSeconds !== undefined && { maxClockSkewSeconds: setting.maxClockSkewSeconds }),
      ...(setting.requireRef === true && { requireRef: true }),
      // The signature and the sums; not every listed file: a secret set since the last signature is meant to differ.
      sumsOnly: true,
    }));
  } catch (e) {
    if (e instanceof TrustError && e.code === 'KS_UNSIGNED')
      throw new TrustError(e.code, `${e.message}: ${SIGN_FIRST}`, e.file, e.keyId);
    throw e;
  }
  repo.requireSigned(sums);
}
