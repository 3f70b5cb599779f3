// A recipe's placeholder rules (SPEC §6): where {{…}} may stand and what it may name. Apart from recipe.ts because it
// applies to run tables, services, exports and the install script alike.
import { CODES, type Diagnostic } from './errors.js';
import type { ParsedDocument } from './toml-document.js';
import { mapStrings, parseTemplate, placeholderContext, placementProblems, someString } from './template.js';
import { SECRET_PLACEMENT_HINT, secretPlacementProblem } from './secret-placement.js';
import type { RawTable } from './raw-table.js';

const RUN_ENUMS = new Set(['type', 'restart_policy', 'update_strategy', 'runtime', 'pull_policy']);

/** Placeholders must parse; in exports only `{{config.…}}` (an export does not re-export another component's). */
export function templateRules(
  doc: ParsedDocument<unknown>,
  value: RawTable,
  at: string[],
  configOnly = false,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  // Text without "{{" has no placeholder and no template error: most recipes have none, and need no walk with paths.
  if (!someString(value, (s) => s.includes('{{'))) return out;
  mapStrings(value, at, (text, path) => {
    if (path.length === at.length + 1 && RUN_ENUMS.has(String(path[at.length]))) return text;
    const { placeholders, error } = parseTemplate(text);
    const secret = placeholders.find((p) => p.ref.kind === 'secret');
    if (error)
      out.push(
        doc.diagnostic(
          CODES.TEMPLATE_SYNTAX,
          path,
          error,
          'placeholders are {{config.KEY}}, {{deps.NAME.exports.KEY}} or {{secret.NAME}}',
        ),
      );
    else if (secret && (configOnly || secretPlacementProblem(path.slice(at.length)) !== undefined))
      out.push(
        doc.diagnostic(
          CODES.SECRET_PLACEMENT,
          path,
          `{{${secret.text}}}: ${configOnly ? 'an export cannot carry a secret' : at[at.length - 1] === 'install' ? 'a secret cannot stand in the install script: shell code is logged and shown by ps' : secretPlacementProblem(path.slice(at.length))!}`,
          configOnly ? 'the dependent names the secret in its own recipe or configuration' : SECRET_PLACEMENT_HINT,
        ),
      );
    else if (configOnly && placeholders.some((p) => p.ref.kind === 'bind'))
      out.push(
        doc.diagnostic(
          CODES.TEMPLATE_SYNTAX,
          path,
          `an export cannot bind another component's export: "${text}"`,
          'exports may use {{config.KEY}}',
        ),
      );
    else
      // In sh code a value is one single-quoted word (SPEC §6): only where such a word means exactly the value.
      for (const p of placementProblems(text, placeholderContext(path)))
        out.push(
          doc.diagnostic(
            CODES.TEMPLATE_SHELL_CONTEXT,
            path,
            `${p.placeholder} cannot stand here in shell code: ${p.why}`,
            p.hint,
          ),
        );
    return text;
  });
  return out;
}
