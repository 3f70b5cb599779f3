// The contract of every revision parser (recipes, plans, fleet files and their resolution): problems come back as
// diagnostics, each with a stable KS_ code, the file, a TOML path and, when given, a line inside that file.
import type { Diagnostic } from '../../src/core/errors.js';
import { holds } from './fuzz-target.js';

const lineCount = (s: string) => s.split('\n').length;

/** `texts`: the files the parser read, by name; a diagnostic may also name a file that could not be read. */
export function checkDiagnostics(diagnostics: readonly Diagnostic[], texts: ReadonlyMap<string, string>): void {
  for (const d of diagnostics) {
    const at = `${d.file}:${d.line ?? '?'} ${d.path} [${d.code}]`;
    holds(
      typeof d.code === 'string' && /^KS_[A-Z0-9_]+$/.test(d.code),
      `a diagnostic without a KS_ code: ${JSON.stringify(d)}`,
    );
    holds(typeof d.message === 'string' && d.message.length > 0, `${at}: an empty message`);
    holds(typeof d.file === 'string' && d.file.length > 0, `${at}: no file`);
    holds(typeof d.path === 'string', `${at}: no TOML path`);
    if (d.line !== undefined) {
      holds(Number.isInteger(d.line) && d.line >= 1, `${at}: line ${d.line} is not a line number`);
      const t = texts.get(d.file);
      if (t !== undefined)
        holds(d.line <= lineCount(t), `${at}: line ${d.line} is past the end of the file (${lineCount(t)} lines)`);
    }
  }
}
