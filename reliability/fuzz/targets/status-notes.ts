// Status notes written by other devices (src/report/status-note.ts parseStatusNote, read by status-notes-read.ts and
// the fleet views): a note is anyone's to push, so nothing from it may reach a terminal as a control character.
import fc from 'fast-check';
import { parseStatusNote } from '../../../src/report/status-note.js';
import { holds, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const word = fc.oneof(
  fc.constantFrom(
    'keystone/dev-1',
    'success',
    'failure',
    'pending',
    '2025-01-01T00:00:00.000Z',
    'target=edge',
    'wave=canary',
    'agent=0.2.0',
    'temp=4e9',
    'mem=-1',
    'target=',
    'wave=a b',
    'x=y',
    '\u001b[31m',
    '\u0007',
    '\r',
    '\u0085',
  ),
  fc.string({ maxLength: 10 }),
);
// An entry's indented lines (issue 29): log lines and a signature, well-formed or not, anywhere.
const indented = fc.oneof(
  fc.constantFrom(
    `  ~ 0123456789abcdef ${'A'.repeat(86)}`,
    `  ~ 0123456789abcdef ${'A'.repeat(85)}`,
    '  ~ ',
    '  | api: \u001b[2Jfatal',
    '  | ',
    '   | x',
  ),
  fc.string({ maxLength: 20 }).map((s) => `  ${s}`),
);
const line = fc.oneof(
  fc.array(word, { maxLength: 7 }).map((ws) => ws.join(' ')),
  indented,
);
const structured = fc.array(line, { maxLength: 8 }).map((ls) => text(ls.join('\n')));
const CONTROL = /\p{Cc}/u;

export const statusNotes: FuzzTarget = {
  name: 'status-notes',
  parses: 'parseStatusNote (src/report/status-note.ts): Git notes other devices pushed',
  maxBytes: 4 * 1024,
  testRuns: 2_000,
  dictionary: ['keystone/', ' success ', ' failure ', 'target=', 'wave=', 'agent=', '\n', '\u001b', '\n  | ', '\n  ~ '],
  structured,
  check(input) {
    const note = utf8(input);
    const lines = parseStatusNote(note);
    holds(lines.length <= note.split('\n').length, 'more status lines than lines');
    for (const l of lines) {
      for (const [k, v] of Object.entries({
        context: l.context,
        state: l.state,
        time: l.time,
        description: l.description,
        ...l.fields,
      }))
        holds(!CONTROL.test(v) && !CONTROL.test(k), `${k} carries a control character: ${JSON.stringify(v)}`);
      holds(l.context.length > 0 && !/\s/.test(l.context), `context ${JSON.stringify(l.context)}`);
      for (const x of l.log) holds(!CONTROL.test(x), `a log line carries a control character: ${JSON.stringify(x)}`);
      // What a signature covers is the entry's own lines: the first is its line, the rest indented.
      holds(
        l.signed.length >= 1 && l.signed.slice(1).every((x) => x.startsWith('  ')),
        'signed lines that are not the entry',
      );
      holds(
        l.signature === undefined || (l.signature.signature.length === 64 && /^[0-9a-f]{16}$/.test(l.signature.keyId)),
        'a malformed signature accepted',
      );
    }
    return lines.length ? 'accepted' : 'refused';
  },
};
