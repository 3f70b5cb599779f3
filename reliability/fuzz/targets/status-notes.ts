// Status notes written by other devices (src/status/status-note.ts parseStatusNote, read by status-notes-read.ts and
// the fleet views): a note is anyone's to push, so nothing from it may reach a terminal as a control character.
import fc from 'fast-check';
import { parseStatusNote } from '../../../src/status/status-note.js';
import { holds, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const word = fc.oneof(fc.constantFrom('keystone/dev-1', 'success', 'failure', 'pending', '2025-01-01T00:00:00.000Z', 'target=edge', 'wave=canary', 'target=', 'wave=a b', 'x=y', '\u001b[31m', '\u0007', '\r', '\u0085'), fc.string({ maxLength: 10 }));
const structured = fc.array(fc.array(word, { maxLength: 7 }).map((ws) => ws.join(' ')), { maxLength: 5 }).map((ls) => text(ls.join('\n')));
const CONTROL = /\p{Cc}/u;

export const statusNotes: FuzzTarget = {
  name: 'status-notes',
  parses: 'parseStatusNote (src/status/status-note.ts): Git notes other devices pushed',
  maxBytes: 4 * 1024,
  testRuns: 2_000,
  dictionary: ['keystone/', ' success ', ' failure ', 'target=', 'wave=', '\n', '\u001b'],
  structured,
  check(input) {
    const note = utf8(input);
    const lines = parseStatusNote(note);
    holds(lines.length <= note.split('\n').length, 'more status lines than lines');
    for (const l of lines) {
      for (const [k, v] of Object.entries({ context: l.context, state: l.state, time: l.time, description: l.description, ...l.fields }))
        holds(!CONTROL.test(v) && !CONTROL.test(k), `${k} carries a control character: ${JSON.stringify(v)}`);
      holds(l.context.length > 0 && !/\s/.test(l.context), `context ${JSON.stringify(l.context)}`);
    }
    return lines.length ? 'accepted' : 'refused';
  },
};
