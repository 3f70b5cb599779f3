// Diagnostics for a terminal: one line each, file:line first so editors can jump to it.
import { formatDiagnostic, type Diagnostic } from '../../core/errors.js';

export function renderDiagnosticsText(subject: string, diags: Diagnostic[]): string {
  return (
    `keystonectl: ${subject} is invalid (${diags.length} error${diags.length === 1 ? '' : 's'}); nothing was changed\n` +
    diags.map((d) => `  ${formatDiagnostic(d)}\n`).join('')
  );
}
