// What `keystonectl enroll` reads of a device (enroll.ts): the identity `keystone identity` printed, JSON or text,
// checked before anything is signed. Apart from the command because it is a parser of untrusted input on its own.
import { deviceNameProblem } from '../../core/labels.js';
import { ageRecipientProblem } from '../../identity/age-recipient-syntax.js';
import { reportKeyLine } from '../../identity/certificate.js';
import { IdentityError } from '../../identity/identity-error.js';
import { parsePublicKey } from '../../trust/minisign.js';
import { TrustError } from '../../trust/trust-error.js';

/**
 * The public half of a device, as `keystone identity --json` prints it (or its text form, copied from a terminal:
 * `device …`, `report key …`, `age recipient …` lines); the report key normalised to its base64 line.
 */
export function parseIdentity(
  text: string,
  source: string,
): { device: string; reportKey: string; ageRecipient: string } {
  const bad = (why: string) =>
    new IdentityError(
      'KS_IDENTITY_MALFORMED',
      `${source}: not a device identity: ${why} (give what \`keystone identity --json\` printed on the device)`,
      source,
    );
  let doc: unknown;
  if (text.trimStart().startsWith('{') || text.trimStart().startsWith('[')) {
    try {
      doc = JSON.parse(text);
    } catch {
      // Not JSON.parse's message: it quotes the input, which may be anything, onto the operator's terminal.
      throw bad('not JSON');
    }
  } else doc = identityText(text, bad);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('not a JSON object');
  const { device, reportKey, ageRecipient } = doc as Record<string, unknown>;
  for (const [k, v] of Object.entries({ device, reportKey, ageRecipient }))
    if (typeof v !== 'string') throw bad(`"${k}" is ${v === undefined ? 'missing' : 'not a string'}`);
  const name = device as string;
  const nameProblem = deviceNameProblem(name);
  if (nameProblem) throw bad(nameProblem);
  let key;
  try {
    // The base64 line, or a whole minisign.pub file: both name the same key.
    key = parsePublicKey(reportKey as string);
  } catch (e) {
    if (e instanceof TrustError) throw bad(`reportKey: ${e.message}`);
    throw e;
  }
  const ageProblem = ageRecipientProblem(ageRecipient as string);
  if (ageProblem) throw bad(`ageRecipient: ${ageProblem}`);
  return { device: name, reportKey: reportKeyLine(key), ageRecipient: ageRecipient as string };
}

/** `keystone identity`'s text form: one line each for the name and the two keys; its other lines (the hint) ignored. */
function identityText(text: string, bad: (why: string) => Error): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, label, pattern] of [
    ['device', 'device', /^device[ \t]+(\S+)[ \t]*$/gm],
    ['reportKey', 'report key', /^report key[ \t]+(\S+)(?:[ \t].*)?$/gm],
    ['ageRecipient', 'age recipient', /^age recipient[ \t]+(\S+)[ \t]*$/gm],
  ] as const) {
    const found = [...text.replace(/\r\n/g, '\n').matchAll(pattern)];
    if (found.length !== 1)
      throw bad(
        found.length
          ? `${found.length} "${label}" lines`
          : `no "${label}" line: neither JSON nor the text \`keystone identity\` prints`,
      );
    fields[key] = found[0]![1]!;
  }
  return fields;
}
