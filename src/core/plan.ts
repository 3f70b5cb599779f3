// The plan format of SPEC §3: which components a device runs, and from which recipe.
import { posix } from 'node:path';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import { escapesRepository } from './recipe.js';
import { withFastPath } from './schema-rules.js';
import { fastPlan } from './recipe-fast-path.js';
import { parseTomlDocument, type ParsedDocument } from './toml-document.js';

export { planSchema, type Plan, type PlanEntry } from './plan-schema.js';
import { planSchema, type Plan, type PlanEntry } from './plan-schema.js';

export interface ParsedPlan {
  file: string;
  plan?: Plan;
  /** Entries whose recipe can be read even when the plan has errors, so one run reports every error of a revision. */
  readableEntries: { entry: PlanEntry; index: number }[];
  diagnostics: Diagnostic[];
  /** Locates later diagnostics (from resolution) in this file. */
  doc: ParsedDocument<Plan>;
}

/** The plan schema, with its fast path for plans that are valid (recipe-fast-path.ts). */
const validatedPlan = withFastPath(planSchema, fastPlan);

/** Parses a plan and checks what it alone can tell: duplicate names and recipe paths that leave the repository. */
export function parsePlan(file: string, text: string): ParsedPlan {
  const doc = parseTomlDocument(file, text, validatedPlan);
  const diagnostics = [...doc.diagnostics];
  const readableEntries: { entry: PlanEntry; index: number }[] = [];
  const raw = doc.raw as { components?: unknown } | undefined;
  if (raw && Array.isArray(raw.components)) {
    const firstIndex = new Map<string, number>();
    raw.components.forEach((entry: unknown, i) => {
      if (typeof entry !== 'object' || entry === null) return;
      const { name, recipe } = entry as { name?: unknown; recipe?: unknown };
      if (typeof name === 'string') {
        const first = firstIndex.get(name);
        if (first === undefined) firstIndex.set(name, i);
        else {
          const firstLine = doc.diagnostic(CODES.DUPLICATE_COMPONENT, ['components', first, 'name'], '').line;
          diagnostics.push(
            doc.diagnostic(
              CODES.DUPLICATE_COMPONENT,
              ['components', i, 'name'],
              `component "${name}" is declared twice`,
              `first declared at components[${first}]${firstLine ? ` (line ${firstLine})` : ''}`,
            ),
          );
        }
      }
      if (typeof recipe !== 'string' || posix.normalize(recipe) === '.') return;
      if (!escapesRepository(recipe))
        readableEntries.push({
          entry: { name: typeof name === 'string' ? name : `components[${i}]`, recipe },
          index: i,
        });
      else
        diagnostics.push(
          doc.diagnostic(
            CODES.PATH_ESCAPE,
            ['components', i, 'recipe'],
            `"${recipe}" points outside the repository`,
            'recipe paths are relative to the repository root',
          ),
        );
    });
  }
  return {
    file,
    plan: diagnostics.length === 0 ? doc.value : undefined,
    readableEntries,
    diagnostics: sortDiagnostics(diagnostics),
    doc,
  };
}

/** The normalised repository path of a plan entry's recipe. */
export function recipePathOf(entry: PlanEntry): string {
  return posix.normalize(entry.recipe);
}
