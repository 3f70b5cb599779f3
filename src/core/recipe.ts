// A recipe file (SPEC §2) parsed: its schema (recipe-schema.ts) with the fast path for valid recipes, then the
// cross-field rules a schema cannot say, each diagnostic with its file, TOML path and line.
import { posix } from 'node:path';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import { withFastPath } from './schema-rules.js';
import { fastRecipe } from './recipe-fast-path.js';
import { updateLockRules } from './update-lock-rules.js';
import { parseTomlDocument, type ParsedDocument } from './toml-document.js';
import type { TomlPath } from './toml-locate.js';
import { table } from './raw-table.js';
import { templateRules } from './template-rules.js';
import { replicaRules, runKindRules, secretFileRules } from './run-table-rules.js';
import { recipeSchema, type RecipeFile } from './recipe-schema.js';

export * from './recipe-schema.js';

export interface ParsedRecipe {
  file: string;
  recipe?: RecipeFile;
  diagnostics: Diagnostic[];
  /** Locates later diagnostics (from resolution) in this file. */
  doc?: ParsedDocument<RecipeFile>;
}

/** The recipe schema, with its fast path for recipes that are valid (recipe-fast-path.ts). */
const validatedRecipe = withFastPath(recipeSchema, fastRecipe);

/** Parses one recipe file. Pure: `file` is only used for messages and to resolve relative artifact paths. */
export function parseRecipe(file: string, text: string): ParsedRecipe {
  const doc = parseTomlDocument(file, text, validatedRecipe, missingRecipeField);
  const diagnostics = [...doc.diagnostics];
  if (doc.raw !== undefined) {
    diagnostics.push(...shapeRules(doc, file), ...artifactRules(doc, file));
  }
  return {
    file,
    recipe: diagnostics.length === 0 ? doc.value : undefined,
    diagnostics: sortDiagnostics(diagnostics),
    doc,
  };
}

/** An artifact without a digest is a security failure, not a mere missing key: give it its own code. */
function missingRecipeField(path: TomlPath) {
  if (path.length === 3 && path[0] === 'artifacts' && path[2] === 'sha256')
    return {
      code: CODES.ARTIFACT_UNSIGNED,
      message: 'an artifact without a sha256 digest is unsigned and is rejected',
      hint: 'add sha256 = "<64 hex>"',
    };
  return undefined;
}

const MEMBER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/i;
/** A member's directory sits beside the group's own `work` and `logs` (a component that was plain before): not those. */
const RESERVED_MEMBER_NAMES = new Set(['work', 'logs']);

/**
 * What a recipe is made of: exactly one of [lifecycle.run] (one program), [lifecycle.services.NAME] (several
 * programs from one install) or [[members]] (a composite of other recipes), with each part's own rules.
 */
function shapeRules(doc: ParsedDocument<unknown>, file: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const raw = table(doc.raw);
  if (!raw) return out;
  const lifecycle = table(raw.lifecycle);
  const runRaw = table(lifecycle?.run);
  const services = table(lifecycle?.services);
  const members = Array.isArray(raw.members) ? raw.members : undefined;
  const kinds = [runRaw && 'lifecycle.run', services && 'lifecycle.services', members && 'members'].filter(
    Boolean,
  ) as string[];
  if (kinds.length === 0 && raw.lifecycle === undefined && raw.members === undefined)
    out.push(
      doc.diagnostic(
        CODES.MISSING_FIELD,
        ['lifecycle'],
        'a recipe needs [lifecycle.run], [lifecycle.services.NAME] or [[members]]',
      ),
    );
  else if (kinds.length === 0 && lifecycle && lifecycle.run === undefined && lifecycle.services === undefined)
    out.push(
      doc.diagnostic(
        CODES.MISSING_FIELD,
        ['lifecycle', 'run'],
        'a recipe needs [lifecycle.run] (one program) or [lifecycle.services.NAME] (several)',
      ),
    );
  if (kinds.length > 1)
    out.push(
      doc.diagnostic(
        CODES.RECIPE_KIND,
        kinds[1] === 'members' ? ['members'] : ['lifecycle', 'services'],
        `a recipe has one of [lifecycle.run], [lifecycle.services.NAME] or [[members]], not ${kinds.join(' and ')}`,
        'split it into several recipes, or make the composite list them as members',
      ),
    );

  out.push(...updateLockRules(doc, table(lifecycle?.update), [runRaw, ...Object.values(services ?? {}).map(table)]));
  if (runRaw)
    out.push(
      ...runKindRules(doc, runRaw, ['lifecycle', 'run']),
      ...replicaRules(doc, runRaw, ['lifecycle', 'run']),
      ...templateRules(doc, runRaw, ['lifecycle', 'run']),
      ...secretFileRules(doc, runRaw, ['lifecycle', 'run']),
    );
  if (services) {
    const names = Object.keys(services);
    if (names.length === 0)
      out.push(doc.diagnostic(CODES.MISSING_FIELD, ['lifecycle', 'services'], '[lifecycle.services] lists no service'));
    for (const name of names) {
      const at = ['lifecycle', 'services', name];
      if (!MEMBER_NAME.test(name) || RESERVED_MEMBER_NAMES.has(name))
        out.push(
          doc.diagnostic(
            CODES.BAD_NAME,
            at,
            `"${name}" is not a valid service name`,
            'letters, digits, "_" and "-", starting with a letter or digit; not "work" or "logs"',
          ),
        );
      const svc = table(services[name]);
      if (!svc) continue;
      const { exports: svcExports, ...svcRun } = svc;
      out.push(
        ...runKindRules(doc, svc, at),
        ...replicaRules(doc, svc, at),
        ...templateRules(doc, svcRun, at),
        ...secretFileRules(doc, svc, at),
      );
      const exportsTableRaw = table(svcExports);
      if (exportsTableRaw) out.push(...templateRules(doc, exportsTableRaw, [...at, 'exports'], true));
      for (const key of ['requires', 'after'] as const) {
        const list = svc[key];
        if (!Array.isArray(list)) continue;
        list.forEach((sibling, k) => {
          if (typeof sibling !== 'string') return;
          if (sibling === name || !names.includes(sibling))
            out.push(
              doc.diagnostic(
                CODES.MEMBER_UNKNOWN,
                [...at, key, k],
                sibling === name
                  ? `service ${name} cannot ${key === 'after' ? 'come after' : 'require'} itself`
                  : `service ${name} names ${sibling}, which this recipe does not declare`,
                `services: ${names.join(', ')}`,
              ),
            );
        });
      }
    }
  }
  if (members) {
    if (lifecycle !== undefined)
      out.push(
        doc.diagnostic(
          CODES.RECIPE_KIND,
          ['lifecycle'],
          'a composite runs its members: it has no [lifecycle] of its own',
        ),
      );
    if (Array.isArray(raw.artifacts) && raw.artifacts.length)
      out.push(
        doc.diagnostic(
          CODES.RECIPE_KIND,
          ['artifacts'],
          "a composite installs its members' artifacts: it has none of its own",
        ),
      );
    if (raw.exports !== undefined)
      out.push(
        doc.diagnostic(
          CODES.RECIPE_KIND,
          ['exports'],
          'a composite exports what its members export',
          'move [exports] into the member recipe',
        ),
      );
    if (members.length === 0)
      out.push(doc.diagnostic(CODES.MISSING_FIELD, ['members'], 'a composite lists at least one member'));
    const seen = new Map<string, number>();
    members.forEach((m, i) => {
      const t = table(m);
      if (!t) return;
      if (typeof t.name === 'string') {
        if (!MEMBER_NAME.test(t.name) || RESERVED_MEMBER_NAMES.has(t.name))
          out.push(
            doc.diagnostic(
              CODES.BAD_NAME,
              ['members', i, 'name'],
              `"${t.name}" is not a valid member name`,
              'letters, digits, "_" and "-", starting with a letter or digit; not "work" or "logs"',
            ),
          );
        const first = seen.get(t.name);
        if (first !== undefined)
          out.push(
            doc.diagnostic(
              CODES.DUPLICATE_COMPONENT,
              ['members', i, 'name'],
              `member "${t.name}" is listed twice`,
              `first at members[${first}]`,
            ),
          );
        else seen.set(t.name, i);
      }
      if (typeof t.recipe === 'string' && (escapesRepository(t.recipe) || t.recipe === file))
        out.push(
          doc.diagnostic(
            t.recipe === file ? CODES.COMPOSITE_NESTED : CODES.PATH_ESCAPE,
            ['members', i, 'recipe'],
            t.recipe === file ? 'a composite cannot list itself' : `"${t.recipe}" points outside the repository`,
            'member recipe paths are relative to the repository root',
          ),
        );
    });
    // A composite's configuration has one section per member.
    const config = table(raw.config);
    for (const key of Object.keys(config ?? {})) {
      if (!seen.has(key))
        out.push(
          doc.diagnostic(
            CODES.MEMBER_UNKNOWN,
            ['config', key],
            `[config.${key}] names no member of this composite`,
            `members: ${[...seen.keys()].join(', ')}`,
          ),
        );
      else if (!table(config![key]))
        out.push(
          doc.diagnostic(
            CODES.INVALID_TYPE,
            ['config', key],
            `[config.${key}] must be a table: a composite's configuration has one section per member`,
          ),
        );
    }
  }
  const exportsRaw = table(raw.exports);
  if (exportsRaw) out.push(...templateRules(doc, exportsRaw, ['exports'], true));
  const installRaw = table(lifecycle?.install);
  if (installRaw && typeof installRaw.script === 'string')
    out.push(...templateRules(doc, { script: installRaw.script }, ['lifecycle', 'install']));
  return out;
}

/** Artifacts must name a fetchable scheme or a path that stays inside the repository. */
function artifactRules(doc: ParsedDocument<unknown>, file: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const list = table(doc.raw)?.artifacts;
  if (!Array.isArray(list)) return out;
  list.forEach((a, i) => {
    const t = table(a);
    if (!t) return;
    if (typeof t.uri !== 'string') return;
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(t.uri)?.[1]?.toLowerCase();
    if (scheme !== undefined) {
      if (!['https', 'http', 'file'].includes(scheme))
        out.push(
          doc.diagnostic(
            CODES.ARTIFACT_BAD_URI,
            ['artifacts', i, 'uri'],
            `unsupported artifact scheme "${scheme}:"`,
            'https, http, file, or a path relative to the recipe',
          ),
        );
      return;
    }
    if (escapesRepository(posix.join(posix.dirname(file), t.uri)) || t.uri.startsWith('/'))
      out.push(doc.diagnostic(CODES.PATH_ESCAPE, ['artifacts', i, 'uri'], `"${t.uri}" points outside the repository`));
  });
  return out;
}

/** True when a repository-relative path (already joined) leaves the repository root. */
export function escapesRepository(relPath: string): boolean {
  if (relPath.includes('\\') || relPath.includes('\0')) return true;
  const n = posix.normalize(relPath);
  return n === '..' || n.startsWith('../') || n.startsWith('/');
}
