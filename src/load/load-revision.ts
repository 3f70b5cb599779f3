// The load phase: read a plan and the recipes it names through any RepoReader, then hand them to the pure core.
import { posix } from 'node:path';
import type { Diagnostic } from '../core/errors.js';
import { resolveDesiredState, type ConfigOverlay, type Resolution } from '../core/desired-state.js';
import { parsePlan, recipePathOf } from '../core/plan.js';
import { escapesRepository, parseRecipe, type ParsedRecipe } from '../core/recipe.js';
import { MAX_DOCUMENT_BYTES, type RepoReader } from '../source/repo-reader.js';

/** Bounded so that a 10,000-component plan does not open 10,000 files at once. */
const READ_CONCURRENCY = 64;
const decoder = new TextDecoder('utf-8', { fatal: true });

/** `overlay`: configuration laid over the plan's own, from another file (a fleet target's `config`). */
export async function loadRevision(reader: RepoReader, planPath: string, overlay?: ConfigOverlay): Promise<Resolution> {
  const planFile = posix.normalize(planPath);
  const planRead = await reader.readFile(planFile, MAX_DOCUMENT_BYTES);
  if (!planRead.ok)
    return { ok: false, diagnostics: [{ code: planRead.code, message: planRead.message, file: planFile, path: '' }] };
  const planText = decode(planRead.bytes);
  if (planText === undefined) return { ok: false, diagnostics: [notUtf8(planFile)] };
  const plan = parsePlan(planFile, planText);

  // The first plan entry naming each recipe is where a read failure is reported.
  const firstEntry = new Map<string, number>();
  for (const { entry, index } of plan.readableEntries) {
    const p = recipePathOf(entry);
    if (!firstEntry.has(p)) firstEntry.set(p, index);
  }
  const recipes = new Map<string, ParsedRecipe>();
  await readRecipes(reader, [...firstEntry.keys()], recipes, (path, code, message) =>
    plan.doc.diagnostic(code, ['components', firstEntry.get(path)!, 'recipe'], message),
  );

  // Composites name their members' recipes: one more level (a member that is itself a composite is refused later).
  const memberOf = new Map<string, { composite: ParsedRecipe; index: number }>();
  for (const r of recipes.values())
    r.recipe?.members?.forEach((m, index) => {
      const p = posix.normalize(m.recipe);
      if (!recipes.has(p) && !memberOf.has(p) && !escapesRepository(p)) memberOf.set(p, { composite: r, index });
    });
  await readRecipes(reader, [...memberOf.keys()], recipes, (path, code, message) => {
    const { composite, index } = memberOf.get(path)!;
    return composite.doc!.diagnostic(code, ['members', index, 'recipe'], message);
  });
  return resolveDesiredState(plan, recipes, overlay);
}

/** Reads and parses `paths` into `recipes`, a few at a time; a read failure is reported where `blame` says. */
async function readRecipes(
  reader: RepoReader,
  paths: string[],
  recipes: Map<string, ParsedRecipe>,
  blame: (path: string, code: Diagnostic['code'], message: string) => Diagnostic,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++]!;
      const read = await reader.readFile(path, MAX_DOCUMENT_BYTES);
      if (!read.ok) {
        recipes.set(path, { file: path, diagnostics: [blame(path, read.code, read.message)] });
        continue;
      }
      const text = decode(read.bytes);
      recipes.set(path, text === undefined ? { file: path, diagnostics: [notUtf8(path)] } : parseRecipe(path, text));
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, paths.length) }, worker));
}

function decode(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

function notUtf8(file: string): Diagnostic {
  return { code: 'KS_TOML_SYNTAX', message: 'not valid UTF-8 (TOML files are UTF-8)', file, path: '' };
}
