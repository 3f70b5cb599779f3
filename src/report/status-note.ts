// The text of a Keystone note (on a device's refs/notes/keystone-devices/<device>, or the shared refs/notes/keystone
// of earlier agents): one entry per device, each a line
//   keystone/<device> <state> <ISO time> [target=<name>] [wave=<name>] [agent=…] [uptime=…] … <description>
// and, indented under it (issue 29), the failing component's last log lines and the device's signature, last:
//     | api: listen EADDRINUSE 0.0.0.0:8080
//     ~ <key id> <signature>
// The `key=value` fields (what the fleet view groups by, and the device's health) come before the description, and
// only known keys count, so a line of an earlier agent (no fields) parses the same, and an earlier reader takes the
// fields for description. Indented lines do not have a line's shape: earlier readers skip them.
// Pure, so the merge rule is testable on its own: a device's new report replaces its own entry and keeps every other
// line as it was (other devices, and lines we do not understand, which a newer agent or a human may have written).
import { noteMessage, signWith, type ReportSigner, type ReportSignature } from '../identity/report-signature.js';
import {
  MAX_LOG_TAIL_BYTES,
  MAX_LOG_TAIL_LINES,
  REPORT_FIELD_KEYS,
  type CommitStatus,
  type DeviceHealth,
} from './commit-status.js';
import { isoTime } from '../core/iso-time.js';

/** The fields of a line beside REPORT_FIELD_KEYS: what ReportDetails says, one word each. */
export const DETAIL_FIELD_KEYS = ['agent', 'uptime', 'load', 'mem', 'disk', 'temp'] as const;
const LINE_FIELD_KEYS = [...REPORT_FIELD_KEYS, ...DETAIL_FIELD_KEYS];

export interface StatusLine {
  context: string;
  state: string;
  time: string;
  /** `target`, `wave` and the detail fields: present only when the line carries them. */
  fields: Record<string, string>;
  description: string;
  /** The log lines under it (`  | …`), in order. */
  log: string[];
  /** Its signature (`  ~ …`), when it has one. */
  signature?: ReportSignature;
  /** Its lines as written, but the signature's: what the signature covers (with the commit: noteMessage). */
  signed: string[];
}

const LOG_PREFIX = '  | ';
const SIG_PREFIX = '  ~ ';

const clean = (text: string) => text.replace(/\p{Cc}/gu, ' ');

/** The entry's lines: its line, its log lines, and its signature when a signer is given. */
export function formatStatusEntry(s: CommitStatus, signer?: ReportSigner): string[] {
  // The description is one line already (describe()); a stray newline would forge another device's line.
  const description = s.description.replace(/[\r\n]+/g, ' ').trim();
  const fields = REPORT_FIELD_KEYS.flatMap((k) => (s.fields?.[k] !== undefined ? [`${k}=${s.fields[k]}`] : []));
  const line = [s.context, s.state, isoTime(s.at), ...fields, ...detailFields(s), description]
    .filter((p) => p !== '')
    .join(' ');
  const lines = [line, ...logLines(s.details?.log ?? []).map((l) => `${LOG_PREFIX}${l}`)];
  if (!signer) return lines;
  const sig = signWith(signer, noteMessage(s.commit, lines));
  return [...lines, `${SIG_PREFIX}${sig.keyId} ${Buffer.from(sig.signature).toString('base64url')}`];
}

/** The first line of the entry (what earlier readers read). */
export function formatStatusLine(s: CommitStatus): string {
  return formatStatusEntry(s)[0]!;
}

const word = (v: string) => /^[^\s=\p{Cc}]{1,64}$/u.test(v);

function detailFields(s: CommitStatus): string[] {
  const d = s.details;
  if (!d) return [];
  const h: DeviceHealth = d.health ?? {};
  const num = (v: number | undefined, digits: number) =>
    v !== undefined && Number.isFinite(v) && v >= -1e15 && v <= 1e15 ? v.toFixed(digits) : undefined;
  const pairs: Array<[string, string | undefined]> = [
    ['agent', d.agent !== undefined && word(d.agent) ? d.agent : undefined],
    ['uptime', num(h.uptimeS, 0)],
    ['load', num(h.load1, 2)],
    ['mem', num(h.memFreeBytes, 0)],
    ['disk', num(h.diskFreeBytes, 0)],
    ['temp', num(h.tempC, 1)],
  ];
  return pairs.flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
}

/** Log lines as a note carries them: no control characters, at most MAX_LOG_TAIL_LINES and MAX_LOG_TAIL_BYTES in all (the newest kept). */
function logLines(log: readonly string[]): string[] {
  const out: string[] = [];
  let bytes = 0;
  for (const l of log.slice(-MAX_LOG_TAIL_LINES).reverse()) {
    let text = clean(l).trimEnd();
    while (Buffer.byteLength(text) > MAX_LOG_TAIL_BYTES) text = text.slice(0, Math.floor(text.length / 2));
    bytes += Buffer.byteLength(text) + 1;
    if (bytes > MAX_LOG_TAIL_BYTES) break;
    out.push(text);
  }
  return out.reverse();
}

const FIELD = new RegExp(`^(${LINE_FIELD_KEYS.join('|')})=([^\\s\\p{Cc}]+)$`, 'u');
const LINE = /^([^\s\p{Cc}]+) ([^\s\p{Cc}]+) ([^\s\p{Cc}]+)(?: (.*))?$/u;
const SIG = /^ {2}~ ([0-9a-f]{16}) ([A-Za-z0-9_-]{86})$/;

/** The entries of a note that have the Keystone shape; other lines are skipped. */
export function parseStatusNote(note: string): StatusLine[] {
  const out: StatusLine[] = [];
  let open: StatusLine | undefined;
  for (const raw of note.split('\n')) {
    if (raw.startsWith('  ')) {
      // Indented: part of the entry above, until its signature closes it.
      if (!open) continue;
      const sig = SIG.exec(raw);
      if (sig) {
        const signature = new Uint8Array(Buffer.from(sig[2]!, 'base64url'));
        if (signature.length === 64) open.signature = { keyId: sig[1]!, signature };
        open = undefined;
        continue;
      }
      open.signed.push(raw);
      // A note is anyone's to push: no control characters reach a terminal or a PR comment from it.
      if (raw.startsWith(LOG_PREFIX)) open.log.push(clean(raw.slice(LOG_PREFIX.length)));
      continue;
    }
    open = undefined;
    const m = LINE.exec(raw);
    if (!m) continue;
    const words = (m[4] ?? '').split(' ');
    const fields: Record<string, string> = {};
    let k = 0;
    for (; k < words.length; k++) {
      const f = FIELD.exec(words[k]!);
      if (!f || f[1]! in fields) break;
      fields[f[1]!] = f[2]!;
    }
    open = {
      context: m[1]!,
      state: m[2]!,
      time: m[3]!,
      fields,
      description: clean(words.slice(k).join(' ')),
      log: [],
      signed: [raw],
    };
    out.push(open);
  }
  return out;
}

/** The note with this status's entry in place of its device's entry (appended when the device had none). */
export function mergeStatusNote(existing: string | undefined, s: CommitStatus, signer?: ReportSigner): string {
  const entry = formatStatusEntry(s, signer);
  const merged: string[] = [];
  let replaced = false;
  let ours = false;
  for (const l of (existing ?? '').split('\n')) {
    if (l.trim() === '') continue;
    if (l.startsWith('  ')) {
      if (!ours) merged.push(l); // our old entry's indented lines go with it
      continue;
    }
    ours = l.split(' ', 1)[0] === s.context;
    if (!ours) merged.push(l);
    else if (!replaced) {
      // a duplicate line of ours (a hand edit): keep one
      replaced = true;
      merged.push(...entry);
    }
  }
  if (!replaced) merged.push(...entry);
  return `${merged.join('\n')}\n`;
}
