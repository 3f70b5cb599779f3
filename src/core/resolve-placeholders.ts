// Placeholders resolved per unit: `{{config.…}}` from its configuration, `{{deps.NAME.exports.KEY}}` from its
// dependencies' exports; values enter as data (SPEC §6), and a resolved health check is checked again.
import { CODES, type Diagnostic } from './errors.js';
import { configKeys, configValue } from './merge-config.js';
import { safeParse } from './valid.js';
import { healthCheckRule, type ConfigTable, type ParsedRecipe, type RunSpec } from './recipe.js';
import type { Aliases, At, ExportValue, Located, Unit } from './resolution-types.js';
import {
  hasPlaceholder,
  mapStrings,
  parseTemplate,
  placeholderContext,
  secretNamesIn,
  secretPlaceholder,
  someString,
  substitute,
} from './template.js';
import { SECRET_PLACEMENT_HINT, secretPlacementProblem } from './secret-placement.js';
import type { TomlPath } from './toml-locate.js';

const RUN_ENUMS = new Set(['type', 'restart_policy', 'update_strategy', 'runtime', 'pull_policy']);

export function exportsOf(
  parsed: ParsedRecipe,
  path: TomlPath,
  raw: Record<string, string | number | boolean> | undefined,
  config: ConfigTable,
  owner: string,
  diagnostics: Diagnostic[],
  at: At,
): Map<string, ExportValue> {
  const out = new Map<string, ExportValue>();
  for (const [key, v] of Object.entries(raw ?? {})) {
    const loc = { parsed, path: [...path, key] };
    let text = typeof v === 'string' ? resolveText(v, loc, config, undefined, undefined, diagnostics, at) : String(v);
    // A secret reaches only the components whose own recipe or configuration names it: never another through an export.
    if (text !== undefined && secretNamesIn(text).length) {
      diagnostics.push(
        at(
          loc,
          CODES.SECRET_PLACEMENT,
          `an export cannot carry a secret (${secretNamesIn(text).map(secretPlaceholder).join(', ')})`,
          'the dependent names the secret in its own recipe or configuration',
        ),
      );
      text = undefined;
    }
    out.set(key, { ...loc, value: text ?? '', owner });
  }
  return out;
}

/** `text` with its placeholders replaced; undefined (with a diagnostic) when one cannot be resolved. */
function resolveText(
  text: string,
  loc: Located,
  config: ConfigTable,
  aliases: Aliases | undefined,
  inputs: Record<string, string> | undefined,
  diagnostics: Diagnostic[],
  at: At,
): string | undefined {
  const { placeholders, error } = parseTemplate(text);
  if (error) return undefined; // reported when the recipe was parsed
  if (placeholders.length === 0) return text;
  let ok = true;
  const values = new Map<string, string>();
  for (const p of placeholders) {
    if (values.has(p.text)) continue;
    if (p.ref.kind === 'secret') {
      // Kept as written: the value is put in only where the component starts (runtime), never in the desired state.
      if (placeholderContext(loc.path) !== 'verbatim') {
        ok = false;
        diagnostics.push(
          at(
            loc,
            CODES.SECRET_PLACEMENT,
            `{{${p.text}}}: ${secretPlacementProblem(loc.path.slice(-2)) ?? 'a secret cannot stand in shell code or a health check'}`,
            SECRET_PLACEMENT_HINT,
          ),
        );
        continue;
      }
      values.set(p.text, secretPlaceholder(p.ref.name));
    } else if (p.ref.kind === 'config') {
      const { value, error: why } = configValue(config, p.ref.path);
      if (value === undefined) {
        ok = false;
        const keys = configKeys(config);
        diagnostics.push(
          why === 'table'
            ? at(
                loc,
                CODES.CONFIG_NOT_SCALAR,
                `{{${p.text}}} is a table, not a value`,
                `name a key inside it: ${keys.filter((k) => k.startsWith(`${p.ref.kind === 'config' ? p.ref.path.join('.') : ''}.`)).join(', ')}`,
              )
            : at(
                loc,
                CODES.CONFIG_UNKNOWN,
                `{{${p.text}}}: no such key in [config]`,
                keys.length ? `keys: ${keys.join(', ')}` : 'the recipe has no [config]',
              ),
        );
        continue;
      }
      values.set(p.text, value);
    } else {
      const dep = aliases?.get(p.ref.dep);
      if (!dep) {
        ok = false;
        const known = [...(aliases?.keys() ?? [])];
        diagnostics.push(
          at(
            loc,
            CODES.BIND_UNKNOWN,
            `{{${p.text}}}: ${p.ref.dep} is not a dependency of this component`,
            known.length
              ? `its dependencies: ${known.join(', ')}`
              : 'declare the dependency in [[dependencies]] (or requires/after for a sibling service)',
          ),
        );
        continue;
      }
      if (dep.ambiguous) {
        ok = false;
        diagnostics.push(
          at(
            loc,
            CODES.BIND_UNKNOWN,
            `{{${p.text}}}: ${p.ref.dep} names both ${dep.ambiguous[0]} and ${dep.ambiguous[1]}`,
            'rename the member or the plan component so that each dependency has its own name',
          ),
        );
        continue;
      }
      const exported = dep.exports.get(p.ref.key);
      if (!exported && dep.unknown) {
        // The dependency's own recipe has errors (reported there): what it exports cannot be known.
        ok = false;
        continue;
      }
      if (!exported) {
        ok = false;
        const keys = [...dep.exports.keys()];
        diagnostics.push(
          at(
            loc,
            CODES.BIND_UNKNOWN,
            `{{${p.text}}}: ${dep.label} exports no "${p.ref.key}"`,
            keys.length ? `${dep.label} exports: ${keys.join(', ')}` : `${dep.label} has no [exports]`,
          ),
        );
        continue;
      }
      values.set(p.text, exported.value);
    }
  }
  if (!ok) return undefined;
  if (inputs) for (const [k, v] of values) inputs[k] = v;
  // Values are data (SPEC §6): one quoted word in sh code, never a new host in a check's URL, verbatim in argv and env.
  const out = substitute(text, placeholderContext(loc.path), (p) => values.get(p.text)!);
  if ('error' in out) {
    diagnostics.push(
      at(
        loc,
        CODES.BAD_HEALTH_CHECK,
        out.error,
        "a value in a check's host or port is a host name, an address or a port number",
      ),
    );
    return undefined;
  }
  return out.text;
}

/** The unit's run with placeholders replaced, and the values used; a resolved health check is checked again. */
export function resolveRun(
  u: Unit,
  aliases: Aliases,
  diagnostics: Diagnostic[],
  at: At,
): { run: RunSpec; script?: string; inputs?: Record<string, string>; secrets?: string[] } {
  const install = u.recipe.lifecycle?.install?.script;
  const scriptHas = install !== undefined && hasPlaceholder(install);
  const files = u.run.secrets?.map((s) => s.name) ?? [];
  if (!hasPlaceholders(u.run) && !scriptHas)
    return { run: u.run, ...(files.length && { secrets: [...new Set(files)].sort() }) };
  const inputs: Record<string, string> = {};
  // The install script takes the unit's configuration too (a service's, a member's): `mkdir -p {{config.data_dir}}`.
  const script = scriptHas
    ? (resolveText(
        install,
        { parsed: u.parsed, path: ['lifecycle', 'install', 'script'] },
        u.config,
        aliases,
        inputs,
        diagnostics,
        at,
      ) ?? install)
    : undefined;
  const run = mapStrings(u.run, u.runPath, (text, path) => {
    if (path.length === u.runPath.length + 1 && RUN_ENUMS.has(String(path[path.length - 1]))) return text;
    return resolveText(text, { parsed: u.parsed, path }, u.config, aliases, inputs, diagnostics, at) ?? text;
  });
  // Where each secret ended up once configuration values are in: only an environment variable's value may hold one.
  const used = new Set(files);
  mapStrings(run, u.runPath, (text, path) => {
    const names = secretNamesIn(text);
    if (names.length === 0) return text;
    const why = secretPlacementProblem(path.slice(u.runPath.length));
    if (why)
      diagnostics.push(
        at(
          { parsed: u.parsed, path },
          CODES.SECRET_PLACEMENT,
          `${names.map(secretPlaceholder).join(', ')}: ${why}`,
          SECRET_PLACEMENT_HINT,
        ),
      );
    else for (const n of names) used.add(n);
    return text;
  });
  if (script !== undefined && secretNamesIn(script).length)
    diagnostics.push(
      at(
        { parsed: u.parsed, path: ['lifecycle', 'install', 'script'] },
        CODES.SECRET_PLACEMENT,
        'a secret cannot stand in the install script: shell code is logged and shown by ps',
        SECRET_PLACEMENT_HINT,
      ),
    );
  const check = run.health?.check;
  if (check !== undefined && check !== u.run.health?.check) {
    const result = safeParse(healthCheckRule, check);
    if (!result.success)
      diagnostics.push(
        at(
          { parsed: u.parsed, path: [...u.runPath, 'health', 'check'] },
          CODES.BAD_HEALTH_CHECK,
          `resolved to ${result.issues[0]?.message ?? `"${check}", which is not a health check`}`,
        ),
      );
  }
  // A secret's "input" is its name, never its value: inputs are shown by apply-dry and kept in the state store.
  for (const k of Object.keys(inputs)) if (k.startsWith('secret.')) delete inputs[k];
  return {
    run,
    ...(script !== undefined && { script }),
    ...(Object.keys(inputs).length && { inputs }),
    ...(used.size && { secrets: [...used].sort() }),
  };
}

const placeholderCache = new WeakMap<object, boolean>();
function hasPlaceholders(run: RunSpec): boolean {
  let has = placeholderCache.get(run);
  if (has === undefined) {
    // Only strings can hold one (a key with braces is never substituted).
    has = someString(run, (s) => s.includes('{{'));
    placeholderCache.set(run, has);
  }
  return has;
}
