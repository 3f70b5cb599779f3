// `--enrollment-key FILE…` (minisign public keys, trusted as --trusted-key is: cli/trusted-files.ts checks who could
// change them) and `--certificate FILE` (read, size-capped; verified by whoever uses it, against the enrolment keys),
// as the agent and `keystone init` take them. Their checks are the agent's rules (agent-config-rules.ts).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { EnrollmentSettings } from '../agent/run-settings.js';
import { parsePublicKey } from '../trust/minisign.js';
import { checkFlag } from './agent-flags.js';
import type { AgentOptionValues } from './agent-options.js';
import type { CliIo } from './io.js';

type EnrollmentValues = Pick<AgentOptionValues, 'enrollment-key' | 'certificate'>;

/** Values that passed their rules, read: the keys parsed, the certificate's text. */
export function readEnrollment(values: EnrollmentValues, io: Pick<CliIo, 'cwd'>): EnrollmentSettings {
  const enrollmentKeys = (values['enrollment-key'] ?? []).map((given) => {
    const file = resolve(io.cwd, given);
    return { file, key: parsePublicKey(readFileSync(file, 'utf8')) };
  });
  if (values.certificate === undefined) return { enrollmentKeys };
  const file = resolve(io.cwd, values.certificate);
  return { enrollmentKeys, certificate: { file, text: readFileSync(file, 'utf8') } };
}

/** The same from flags no rule has seen yet (`keystone init`'s): checked by the agent's rules, then read. */
export function enrollmentSettings(values: EnrollmentValues, io: Pick<CliIo, 'cwd'>): EnrollmentSettings {
  const checked: EnrollmentValues = {};
  if (values['enrollment-key'] !== undefined)
    checked['enrollment-key'] = checkFlag('enrollment-key', values['enrollment-key'], io) as string[];
  if (values.certificate !== undefined)
    checked.certificate = checkFlag('certificate', values.certificate, io) as string;
  return readEnrollment(checked, io);
}
