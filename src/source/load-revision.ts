// The load phase: read a plan and the recipes it names through any RepoReader, then hand them to the pure core.
import { posix } from 'node:path';
import type { Diagnostic } from '../core/errors.js';
import { resolveDesiredState, type Resolution } from '../core/desired-state.js';
import { parsePlan, recipePathOf } from '../core/plan.js';
import { parseRecipe, type ParsedRecipe } from '../core/recipe.js';
import { MAX_DOCUMENT_BYTES, type RepoReader } from './repo-reader.js';

/** Bounded so that a 10,000-component plan does not open 10,000 files at once. */
const READ_CONCURRENCY = 64;
const decoder = new TextDecoder('utf-8', { fatal: true });

export async function loadRevision(reader: RepoReader, planPath: string): Promise<Resolution> {
  const planFile = posix.normalize(planPath);
  const planRead = await reader.readFile(planFile, MAX_DOCUMENT_BYTES);
  if (!planRead.ok) return { ok: false, diagnostics: [{ code: planRead.code, message: planRead.message, file: planFile, path: '' }] };
  const planText = decode(planRead.bytes);
  if (planText === undefined) return { ok: false, diagnostics: [notUtf8(planFile)] };
  const plan = parsePlan(planFile, planText);

  // The first plan entry naming each recipe is where a read failure is reported.
  const firstEntry = new Map<string, number>();
  for (const { entry, index } of plan.readableEntries) {
    const p = recipePathOf(entry);
    if (!firstEntry.has(p)) firstEntry.set(p, index);
  }
  const paths = [...firstEntry.keys()];
  const recipes = new Map<string, ParsedRecipe>();
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++]!;
      const read = await reader.readFile(path, MAX_DOCUMENT_BYTES);
      if (!read.ok) {
        const d = plan.doc.diagnostic(read.code, ['components', firstEntry.get(path)!, 'recipe'], read.message);
        recipes.set(path, { file: path, diagnostics: [d] });
        continue;
      }
      const text = decode(read.bytes);
      recipes.set(path, text === undefined ? { file: path, diagnostics: [notUtf8(path)] } : parseRecipe(path, text));
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, paths.length) }, worker));
  return resolveDesiredState(plan, recipes);
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
