// The diagnostics of a revision, sorted, each once (several units of one entry may report one problem).
import { sortDiagnostics, type Diagnostic } from './errors.js';

export function dedupeDiagnostics(diags: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return sortDiagnostics(diags).filter((d) => {
    const key = `${d.file}\0${d.line}\0${d.path}\0${d.code}\0${d.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
