// The text of a Keystone note (on a device's refs/notes/keystone-devices/<device>, or the shared refs/notes/keystone
// of earlier agents): one line per device,
//   keystone/<device> <state> <ISO time> [target=<name>] [wave=<name>] <description>
// The `key=value` fields (what the fleet view groups by) come before the description, and only known keys count, so
// a line of an earlier agent (no fields) parses the same, and an earlier reader takes the fields for description.
// Pure, so the merge rule is testable on its own: a device's new report replaces its own line and keeps every other
// line as it was (other devices, and lines we do not understand, which a newer agent or a human may have written).
import { REPORT_FIELD_KEYS, type CommitStatus } from './commit-status.js';

export interface StatusLine {
  context: string;
  state: string;
  time: string;
  /** `target`, `wave`: present only when the line carries them. */
  fields: Record<string, string>;
  description: string;
}

export function formatStatusLine(s: CommitStatus): string {
  // The description is one line already (describe()); a stray newline would forge another device's line.
  const description = s.description.replace(/[\r\n]+/g, ' ').trim();
  const fields = REPORT_FIELD_KEYS.flatMap((k) => (s.fields?.[k] !== undefined ? [`${k}=${s.fields[k]}`] : []));
  return [s.context, s.state, new Date(s.at).toISOString(), ...fields, description].filter((p) => p !== '').join(' ');
}

const FIELD = new RegExp(`^(${REPORT_FIELD_KEYS.join('|')})=([^\\s\\p{Cc}]+)$`, 'u');

/** The lines of a note that have the Keystone shape; others are skipped. */
export function parseStatusNote(note: string): StatusLine[] {
  const out: StatusLine[] = [];
  for (const line of note.split('\n')) {
    const m = /^([^\s\p{Cc}]+) ([^\s\p{Cc}]+) ([^\s\p{Cc}]+)(?: (.*))?$/u.exec(line);
    if (!m) continue;
    const words = (m[4] ?? '').split(' ');
    const fields: Record<string, string> = {};
    let k = 0;
    for (; k < words.length; k++) {
      const f = FIELD.exec(words[k]!);
      if (!f || f[1]! in fields) break;
      fields[f[1]!] = f[2]!;
    }
    // A note is anyone's to push: no control characters reach a terminal or a PR comment from it.
    out.push({ context: m[1]!, state: m[2]!, time: m[3]!, fields, description: words.slice(k).join(' ').replace(/\p{Cc}/gu, ' ') });
  }
  return out;
}

/** The note with this status's line in place of its device's line (appended when the device had none). */
export function mergeStatusNote(existing: string | undefined, s: CommitStatus): string {
  const line = formatStatusLine(s);
  const lines = (existing ?? '').split('\n').filter((l) => l.trim() !== '');
  let replaced = false;
  const merged = lines.flatMap((l) => {
    if (l.split(' ', 1)[0] !== s.context) return [l];
    if (replaced) return []; // a duplicate line of ours (a hand edit): keep one
    replaced = true;
    return [line];
  });
  if (!replaced) merged.push(line);
  return `${merged.join('\n')}\n`;
}
