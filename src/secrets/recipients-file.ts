// secrets/recipients/T.txt (SPEC §16): target T's one public recipient, in the format `age -R` reads, so that an
// operator without Keystone encrypts a secret for T with `age -R secrets/recipients/T.txt`. The `#` lines (age skips
// them) say who reads T's key, so that `keystonectl secret ls` can answer without opening anything, and a rekey can
// say which readers and operators it adds:
//
//   # keystone target edge: encrypt its secrets with age -R secrets/recipients/edge.txt
//   # readers: edge-1 edge-2
//   # operators: 1
//   # operator age1…          (one line each: the operators' recipients the key is wrapped to)
//   age1…
import { parseRecipients } from './age-codec.js';
import { SecretError } from './secret-error.js';

export interface RecipientsFile {
  recipient: string;
  /** The devices T's key is wrapped to, as the file says (undefined: the file does not say, e.g. written by hand). */
  readers?: string[];
  /** How many operator recipients T's key is wrapped to, as the file says. */
  operators?: number;
  /** Which, as the file says (undefined: it does not; files written before the `# operator` lines). */
  operatorRecipients?: string[];
}

/** Device names are one word each (SPEC §15), so a line of names splits on spaces; long lists wrap at this width. */
const LINE_WIDTH = 100;

export function formatRecipientsFile(
  target: string,
  f: { recipient: string; readers: readonly string[]; operators: readonly string[] },
): string {
  const lines = [`# keystone target ${target}: encrypt its secrets with age -R secrets/recipients/${target}.txt`];
  let line = '# readers:';
  for (const name of f.readers) {
    if (line.length + 1 + name.length > LINE_WIDTH && line !== '# readers:') {
      lines.push(line);
      line = '# readers:';
    }
    line += ` ${name}`;
  }
  lines.push(line, `# operators: ${f.operators.length}`, ...f.operators.map((o) => `# operator ${o}`), f.recipient);
  return lines.join('\n') + '\n';
}

/**
 * The recipient and what the comments say. A target has exactly one recipient: a second one (added by hand, or by
 * someone who wants the secrets) is refused, not encrypted to.
 */
export function parseRecipientsFile(text: string, file: string): RecipientsFile {
  let recipients: string[];
  try {
    recipients = parseRecipients(text, file);
  } catch (e) {
    throw new SecretError('KS_SECRET_OPERATOR', (e as Error).message, file);
  }
  if (recipients.length !== 1)
    throw new SecretError(
      'KS_SECRET_OPERATOR',
      `${file} holds ${recipients.length} recipients: a target has exactly one (its key's); ${recipients.length ? 'whoever added another would read every secret set for the target' : 'keystonectl secret rekey --target makes it'}`,
      file,
    );
  let readers: string[] | undefined;
  let operators: number | undefined;
  let operatorRecipients: string[] | undefined;
  for (const raw of text.replace(/\r\n/g, '\n').split('\n')) {
    const r = /^#\s*readers:(.*)$/.exec(raw.trim());
    if (r) readers = [...(readers ?? []), ...r[1]!.split(/\s+/).filter(Boolean)];
    const o = /^#\s*operators:\s*(\d+)\s*$/.exec(raw.trim());
    if (o) operators = Number(o[1]);
    const op = /^#\s*operator\s+(age1[02-9ac-hj-np-z]{58})\s*$/.exec(raw.trim());
    if (op) operatorRecipients = [...(operatorRecipients ?? []), op[1]!];
  }
  return {
    recipient: recipients[0]!,
    ...(readers && { readers }),
    ...(operators !== undefined && { operators }),
    ...(operatorRecipients && { operatorRecipients }),
  };
}
