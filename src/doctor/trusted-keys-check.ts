// The trusted keys parse as the agent would read them (trust/keyring.ts), each file on its own so that every bad one
// is named; --allow-unsigned is said out loud.
import { readFile } from 'node:fs/promises';
import { buildKeyring } from '../trust/keyring.js';
import { TrustError } from '../trust/trust-error.js';
import { fail, pass, warn, type CheckResult } from './check-result.js';
import type { DoctorSetup } from './doctor-setup.js';

export async function checkTrustedKeys(trust: DoctorSetup['trust']): Promise<CheckResult> {
  const files = trust.keyFiles;
  if (trust.unsigned) {
    if (files.length)
      return fail(
        'trusted-keys',
        '--allow-unsigned and --trusted-key are both given: the agent refuses to start',
        'keep one: --trusted-key FILE (production) or --allow-unsigned (development)',
        'KS_USAGE',
      );
    return warn(
      'trusted-keys',
      '--allow-unsigned: every revision is applied without a signature check (development only)',
      'for a device in production, give --trusted-key FILE (keystonectl keygen writes one)',
    );
  }
  if (files.length === 0)
    return fail(
      'trusted-keys',
      'no trusted key and no --allow-unsigned: the agent refuses to start',
      'give --trusted-key FILE (repeatable), the public key the repository is signed with',
      'KS_USAGE',
    );
  const texts: Array<{ source: string; text: string }> = [];
  const problems: string[] = [];
  let code: string | undefined;
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      problems.push(`${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      code ??= 'KS_USAGE';
      continue;
    }
    try {
      buildKeyring([{ source: file, text }]);
      texts.push({ source: file, text });
    } catch (e) {
      problems.push((e as Error).message);
      code ??= e instanceof TrustError ? e.code : undefined;
    }
  }
  if (problems.length)
    return fail(
      'trusted-keys',
      problems.join('; '),
      'give the public key files minisign or keystonectl keygen wrote (`untrusted comment:` line, then the key); never a secret key',
      code,
    );
  try {
    // The threshold rule is the keyring's own: a whole number ≥ 1, no more than the distinct keys given.
    const keyring = buildKeyring(texts, trust.threshold === undefined ? 1 : Number(trust.threshold));
    return pass(
      'trusted-keys',
      `${keyring.keys.size} trusted key${keyring.keys.size === 1 ? '' : 's'} (${[...keyring.keys.keys()].join(', ')}), ${keyring.threshold} signature${keyring.threshold === 1 ? '' : 's'} required`,
    );
  } catch (e) {
    return fail(
      'trusted-keys',
      (e as Error).message,
      'give --threshold a whole number no larger than the number of distinct --trusted-key files',
      e instanceof TrustError ? e.code : undefined,
    );
  }
}
