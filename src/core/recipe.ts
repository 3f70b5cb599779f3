// The recipe format of SPEC §2 as a schema (valibot, through valid.ts) over smol-toml, plus the cross-field rules a schema cannot say.
import { posix } from 'node:path';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import { parseDuration } from './duration.js';
import { LINUX_CAPABILITIES } from './capabilities.js';
import {
  durationText,
  healthCheckProblem,
  inIdRange,
  issue,
  LITERAL_CHECK_KIND,
  portNumber,
  positiveInt,
  reverseDnsName,
  semverRangeText,
  semverText,
  USER_SPEC,
  withFastPath,
} from './schema-rules.js';
import { fastRecipe } from './recipe-fast-path.js';
import { updateLockRules } from './update-lock-rules.js';
import { parseTomlDocument, type ParsedDocument } from './toml-document.js';
import * as v from 'valibot';
import { check, int, minLength, number, record, refine, strictObject, type RefinementCtx } from './valid.js';
import type { TomlPath } from './toml-locate.js';
import { hasPlaceholder, mapStrings, parseTemplate, placeholderContext, placementProblems, SECRET_NAME, someString } from './template.js';
import { SECRET_PLACEMENT_HINT, secretPlacementProblem } from './secret-placement.js';

const duration = (fallback: string) =>
  v.pipe(
    v.optional(durationText, fallback),
    v.transform((t) => parseDuration(t) as number),
  );

const stringMap = record(v.string(), v.string());

const artifact = strictObject({
  uri: v.pipe(v.string(), minLength(1)),
  sha256: v.pipe(
    v.string(),
    refine<string>((t, ctx) => {
      if (!/^[0-9a-f]{64}$/i.test(t))
        issue(ctx, CODES.ARTIFACT_UNSIGNED, `"${t}" is not a sha256 digest`, '64 hexadecimal characters');
    }),
  ),
  unpack: v.optional(v.boolean(), false),
});

const exec = strictObject({
  command: v.pipe(v.string(), minLength(1)),
  args: v.optional(v.array(v.string()), []),
  env: v.optional(stringMap, {}),
});

/** Capabilities granted to a process or a container: exactly these, none when empty. */
const capabilityList = v.array(
  v.pipe(
    v.string(),
    refine<string>((t, ctx) => {
      if (!LINUX_CAPABILITIES.has(t))
        issue(ctx, CODES.BAD_CAPABILITY, `"${t}" is not a Linux capability`, 'e.g. "CAP_NET_BIND_SERVICE"');
    }),
  ),
);

const nonEmpty = () => v.pipe(v.string(), minLength(1));

const security = strictObject({
  user: v.optional(
    v.pipe(
      v.string(),
      v.regex(USER_SPEC, 'expected "user" or "user:group"'),
      check(inIdRange, 'a numeric uid or gid is at most 2147483646'),
    ),
  ),
  no_new_privileges: v.optional(v.boolean(), true),
  capabilities: v.optional(capabilityList, []),
});

const container = strictObject({
  image: nonEmpty(),
  runtime: v.optional(v.picklist(['auto', 'docker', 'podman']), 'auto'),
  pull_policy: v.optional(v.picklist(['always', 'if-not-present', 'never']), 'if-not-present'),
  network_mode: v.optional(nonEmpty(), 'bridge'),
  user: v.optional(v.pipe(v.string(), minLength(1), check(inIdRange, 'a numeric uid or gid is at most 2147483646'))),
  privileged: v.optional(v.boolean(), false),
  command: v.optional(v.array(v.string())),
  env: v.optional(stringMap, {}),
  ports: v.optional(v.array(strictObject({ host_port: portNumber, container_port: portNumber })), []),
  mounts: v.optional(v.array(strictObject({ source: nonEmpty(), target: nonEmpty(), read_only: v.optional(v.boolean(), false) })), []),
  resources: v.optional(strictObject({ memory_mb: v.optional(positiveInt), pids_limit: v.optional(positiveInt) })),
  // Every capability is dropped (CapDrop ALL) unless listed here. Optional without a default (read it as `?? []`):
  // a default would enter every parsed recipe and so change the hash of components that never set it.
  capabilities: v.optional(capabilityList),
  // The other namespaces, private unless set (no defaults, for the same reason). Anything but a private one is a host
  // namespace or another container's, which the device policy allows only with --allow-host-namespaces.
  pid_mode: v.optional(nonEmpty()),
  ipc_mode: v.optional(nonEmpty()),
  uts_mode: v.optional(nonEmpty()),
  userns_mode: v.optional(nonEmpty()),
  // Host devices given to the container at the same path (`/dev/ttyUSB0`); each needs --allow-device.
  devices: v.optional(v.array(v.pipe(v.string(), v.regex(/^\/dev\//, 'expected a device path under /dev/')))),
});

/** A health check as it runs: `http(s)://…`, `tcp://host:port` or `cmd:<command line>`. */
function checkHealthCheck(t: string, ctx: RefinementCtx): void {
  const why = healthCheckProblem(t);
  if (why !== undefined) issue(ctx, CODES.BAD_HEALTH_CHECK, `"${t}" is not a health check: ${why}`, 'http(s)://…, tcp://host:port or cmd:<command line>');
}

const healthCheck = v.pipe(
  v.string(),
  refine<string>((t, ctx) => {
    // A check with placeholders is checked again once resolved; here only its kind, which no value may choose.
    if (hasPlaceholder(t)) {
      if (!LITERAL_CHECK_KIND.test(t))
        issue(
          ctx,
          CODES.BAD_HEALTH_CHECK,
          `"${t}" does not begin with its kind: a configuration value cannot choose between a URL and a command`,
          'begin the check with http://, https://, tcp:// or cmd: and put placeholders after it (http://127.0.0.1:{{config.port}}/health)',
        );
      return;
    }
    checkHealthCheck(t, ctx);
  }),
);

const health = strictObject({
  check: healthCheck,
  interval: duration('10s'),
  timeout: duration('3s'),
  failure_threshold: v.optional(positiveInt, 3),
});

/**
 * A secret given as a file (SPEC §16): `name` is secrets/NAME.age, `path` a file name in the component's own run
 * directory (a process), or where the container sees it (a name: under /run/secrets; or an absolute path).
 */
const secretFile = strictObject({
  name: v.pipe(v.string(), v.regex(SECRET_NAME, 'a secret\'s name is letters, digits, "_" and "-" (at most 63), as its file secrets/NAME.age')),
  path: nonEmpty(),
});

const runShape = {
  type: v.optional(v.picklist(['process', 'container']), 'process'),
  restart_policy: v.optional(v.picklist(['always', 'on-failure', 'never']), 'always'),
  exec: v.optional(exec),
  security: v.optional(security),
  container: v.optional(container),
  health: v.optional(health),
  // The next two have no schema default on purpose (read them as `?? 'stop-first'` and `?? 1`): a default would enter
  // every parsed recipe and change the hash of every existing component, restarting a whole device on upgrade.
  // How a new hash replaces a running instance: stop the old first, or start the new and stop the old once healthy.
  update_strategy: v.optional(v.picklist(['stop-first', 'start-first'])),
  // Instances of the component; 0 keeps it in the plan with nothing running. More than one cannot share host ports.
  replicas: v.optional(v.pipe(number(), int(), v.minValue(0))),
  // Secrets given as files; optional without a default, so that recipes without any keep their hashes.
  secrets: v.optional(v.array(secretFile)),
};
const run = strictObject(runShape);

/**
 * An update lock (SPEC §19): a file in the component's work directory that, while a process holds a flock on it,
 * keeps a new revision from stopping the component. Relative and inside the work directory; no default timeout.
 */
const updateLock = strictObject({
  lock: v.pipe(
    v.string(),
    minLength(1),
    check<string>((p) => !p.startsWith('/') && !p.split('/').some((seg) => seg === '..' || seg === '.' || seg === ''), 'a path inside the component\'s work directory, like "run/update.lock": relative, without "..", "." or empty parts'),
  ),
  lock_timeout: v.optional(v.pipe(durationText, v.transform((t) => parseDuration(t) as number))),
});

/** A configuration value: a scalar, or a table of them (`[config.http]`). Interpolated into strings by `{{config.…}}`. */
type ConfigValue = string | number | boolean | { [key: string]: ConfigValue };
const configValue: v.GenericSchema<ConfigValue> = v.lazy(() => v.union([v.string(), number(), v.boolean(), record(v.string(), configValue)]));
export const configTable = record(v.string(), configValue);
export type ConfigTable = v.InferOutput<typeof configTable>;

/** Values a component offers its dependents (`{{deps.NAME.exports.KEY}}`); they may interpolate `{{config.…}}`. */
const exportsTable = record(v.string(), v.union([v.string(), number(), v.boolean()]));

/** One of several services run from one recipe: a run of its own, plus its order among its siblings. */
const service = strictObject({
  ...runShape,
  // Siblings this service needs: `requires` restarts it with them (hard), `after` only orders its start.
  requires: v.optional(v.array(v.string())),
  after: v.optional(v.array(v.string())),
  exports: v.optional(exportsTable),
});

const member = strictObject({
  name: v.string(),
  recipe: nonEmpty(),
});

const dependency = strictObject({
  name: reverseDnsName,
  version: v.optional(semverRangeText),
  type: v.optional(v.picklist(['hard', 'ordering']), 'hard'),
});

export const recipeSchema = strictObject({
  metadata: strictObject({
    name: reverseDnsName,
    version: semverText,
    description: v.optional(v.string()),
  }),
  artifacts: v.optional(v.array(artifact), []),
  // Optional, with no defaults, like every key added after the first release: absent keys keep hashes stable.
  config: v.optional(configTable),
  exports: v.optional(exportsTable),
  lifecycle: v.optional(
    strictObject({
      install: v.optional(strictObject({ script: nonEmpty(), timeout: duration('5m') })),
      run: v.optional(run),
      services: v.optional(record(v.string(), service)),
      update: v.optional(updateLock),
    }),
  ),
  // A sidecar composite: member recipes installed, updated and operated as one (SPEC §12).
  members: v.optional(v.array(member)),
  dependencies: v.optional(v.array(dependency), []),
});

/** A recipe file as parsed: defaults applied, durations in milliseconds. One run, several services, or members. */
export type RecipeFile = v.InferOutput<typeof recipeSchema>;
export type RunSpec = v.InferOutput<typeof run>;
/** `[lifecycle.update]`: the lock file (relative to the work directory) and the timeout in ms, if any. */
export type UpdateLockSpec = v.InferOutput<typeof updateLock>;
export type ServiceSpec = v.InferOutput<typeof service>;
export type RecipeMember = v.InferOutput<typeof member>;
export type RecipeDependency = RecipeFile['dependencies'][number];
/** What one runnable unit runs: a recipe with exactly one resolved run (a plain recipe, a service, a member, a replica). */
export type Recipe = Omit<RecipeFile, 'lifecycle' | 'members' | 'config' | 'exports'> & {
  lifecycle: { install?: NonNullable<RecipeFile['lifecycle']>['install']; run: RunSpec; update?: UpdateLockSpec };
  config?: ConfigTable;
  exports?: RecipeFile['exports'];
};

/** The health-check rule for a check whose placeholders are resolved: checked in full, whatever the values hold. */
export const healthCheckRule = v.pipe(v.string(), refine<string>(checkHealthCheck));


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
  return { file, recipe: diagnostics.length === 0 ? doc.value : undefined, diagnostics: sortDiagnostics(diagnostics), doc };
}

/** An artifact without a digest is a security failure, not a mere missing key: give it its own code. */
function missingRecipeField(path: TomlPath) {
  if (path.length === 3 && path[0] === 'artifacts' && path[2] === 'sha256')
    return { code: CODES.ARTIFACT_UNSIGNED, message: 'an artifact without a sha256 digest is unsigned and is rejected', hint: 'add sha256 = "<64 hex>"' };
  return undefined;
}

type RawTable = Record<string, unknown>;
const table = (v: unknown): RawTable | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as RawTable) : undefined;

const MEMBER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/i;
/** A member's directory sits beside the group's own `work` and `logs` (a component that was plain before): not those. */
const RESERVED_MEMBER_NAMES = new Set(['work', 'logs']);
const RUN_ENUMS = new Set(['type', 'restart_policy', 'update_strategy', 'runtime', 'pull_policy']);

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
  const kinds = [runRaw && 'lifecycle.run', services && 'lifecycle.services', members && 'members'].filter(Boolean) as string[];
  if (kinds.length === 0 && raw.lifecycle === undefined && raw.members === undefined)
    out.push(doc.diagnostic(CODES.MISSING_FIELD, ['lifecycle'], 'a recipe needs [lifecycle.run], [lifecycle.services.NAME] or [[members]]'));
  else if (kinds.length === 0 && lifecycle && lifecycle.run === undefined && lifecycle.services === undefined)
    out.push(doc.diagnostic(CODES.MISSING_FIELD, ['lifecycle', 'run'], 'a recipe needs [lifecycle.run] (one program) or [lifecycle.services.NAME] (several)'));
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
    out.push(...runKindRules(doc, runRaw, ['lifecycle', 'run']), ...replicaRules(doc, runRaw, ['lifecycle', 'run']), ...templateRules(doc, runRaw, ['lifecycle', 'run']), ...secretFileRules(doc, runRaw, ['lifecycle', 'run']));
  if (services) {
    const names = Object.keys(services);
    if (names.length === 0) out.push(doc.diagnostic(CODES.MISSING_FIELD, ['lifecycle', 'services'], '[lifecycle.services] lists no service'));
    for (const name of names) {
      const at = ['lifecycle', 'services', name];
      if (!MEMBER_NAME.test(name) || RESERVED_MEMBER_NAMES.has(name))
        out.push(doc.diagnostic(CODES.BAD_NAME, at, `"${name}" is not a valid service name`, 'letters, digits, "_" and "-", starting with a letter or digit; not "work" or "logs"'));
      const svc = table(services[name]);
      if (!svc) continue;
      const { exports: svcExports, ...svcRun } = svc;
      out.push(...runKindRules(doc, svc, at), ...replicaRules(doc, svc, at), ...templateRules(doc, svcRun, at), ...secretFileRules(doc, svc, at));
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
                sibling === name ? `service ${name} cannot ${key === 'after' ? 'come after' : 'require'} itself` : `service ${name} names ${sibling}, which this recipe does not declare`,
                `services: ${names.join(', ')}`,
              ),
            );
        });
      }
    }
  }
  if (members) {
    if (lifecycle !== undefined) out.push(doc.diagnostic(CODES.RECIPE_KIND, ['lifecycle'], 'a composite runs its members: it has no [lifecycle] of its own'));
    if (Array.isArray(raw.artifacts) && raw.artifacts.length)
      out.push(doc.diagnostic(CODES.RECIPE_KIND, ['artifacts'], 'a composite installs its members\' artifacts: it has none of its own'));
    if (raw.exports !== undefined)
      out.push(doc.diagnostic(CODES.RECIPE_KIND, ['exports'], 'a composite exports what its members export', 'move [exports] into the member recipe'));
    if (members.length === 0) out.push(doc.diagnostic(CODES.MISSING_FIELD, ['members'], 'a composite lists at least one member'));
    const seen = new Map<string, number>();
    members.forEach((m, i) => {
      const t = table(m);
      if (!t) return;
      if (typeof t.name === 'string') {
        if (!MEMBER_NAME.test(t.name) || RESERVED_MEMBER_NAMES.has(t.name))
          out.push(doc.diagnostic(CODES.BAD_NAME, ['members', i, 'name'], `"${t.name}" is not a valid member name`, 'letters, digits, "_" and "-", starting with a letter or digit; not "work" or "logs"'));
        const first = seen.get(t.name);
        if (first !== undefined) out.push(doc.diagnostic(CODES.DUPLICATE_COMPONENT, ['members', i, 'name'], `member "${t.name}" is listed twice`, `first at members[${first}]`));
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
        out.push(doc.diagnostic(CODES.MEMBER_UNKNOWN, ['config', key], `[config.${key}] names no member of this composite`, `members: ${[...seen.keys()].join(', ')}`));
      else if (!table(config![key])) out.push(doc.diagnostic(CODES.INVALID_TYPE, ['config', key], `[config.${key}] must be a table: a composite's configuration has one section per member`));
    }
  }
  const exportsRaw = table(raw.exports);
  if (exportsRaw) out.push(...templateRules(doc, exportsRaw, ['exports'], true));
  const installRaw = table(lifecycle?.install);
  if (installRaw && typeof installRaw.script === 'string') out.push(...templateRules(doc, { script: installRaw.script }, ['lifecycle', 'install']));
  return out;
}

/** Placeholders must parse; in exports only `{{config.…}}` (an export does not re-export another component's). */
function templateRules(doc: ParsedDocument<unknown>, value: RawTable, at: string[], configOnly = false): Diagnostic[] {
  const out: Diagnostic[] = [];
  // Text without "{{" has no placeholder and no template error: most recipes have none, and need no walk with paths.
  if (!someString(value, (s) => s.includes('{{'))) return out;
  mapStrings(value, at, (text, path) => {
    if (path.length === at.length + 1 && RUN_ENUMS.has(String(path[at.length]))) return text;
    const { placeholders, error } = parseTemplate(text);
    const secret = placeholders.find((p) => p.ref.kind === 'secret');
    if (error) out.push(doc.diagnostic(CODES.TEMPLATE_SYNTAX, path, error, 'placeholders are {{config.KEY}}, {{deps.NAME.exports.KEY}} or {{secret.NAME}}'));
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
      out.push(doc.diagnostic(CODES.TEMPLATE_SYNTAX, path, `an export cannot bind another component's export: "${text}"`, 'exports may use {{config.KEY}}'));
    else
      // In sh code a value is one single-quoted word (SPEC §6): only where such a word means exactly the value.
      for (const p of placementProblems(text, placeholderContext(path)))
        out.push(doc.diagnostic(CODES.TEMPLATE_SHELL_CONTEXT, path, `${p.placeholder} cannot stand here in shell code: ${p.why}`, p.hint));
    return text;
  });
  return out;
}

/** A secret file's path: a plain file name for a process; for a container also an absolute path; each path once. */
function secretFileRules(doc: ParsedDocument<unknown>, runRaw: RawTable, at: string[]): Diagnostic[] {
  const list = runRaw.secrets;
  if (!Array.isArray(list)) return [];
  const out: Diagnostic[] = [];
  const container = (runRaw.type ?? 'process') === 'container';
  const seen = new Map<string, number>();
  list.forEach((entry, i) => {
    const path = table(entry)?.path;
    if (typeof path !== 'string' || path === '') return;
    const plainName = /^[A-Za-z0-9._-]+$/.test(path) && path !== '.' && path !== '..';
    const absolute = container && path.startsWith('/') && !path.split('/').some((p) => p === '..' || p === '.') && !path.includes('\0');
    if (!plainName && !absolute)
      out.push(
        doc.diagnostic(
          CODES.SECRET_FILE,
          [...at, 'secrets', i, 'path'],
          `"${path}" is not ${container ? 'a file name or an absolute path in the container' : "a file name in the component's run directory"}`,
          container ? 'e.g. path = "db_password" (seen as /run/secrets/db_password) or "/etc/app/tls.key"' : 'e.g. path = "tls.key": letters, digits, ".", "_" and "-", no directories',
        ),
      );
    const first = seen.get(path);
    if (first !== undefined) out.push(doc.diagnostic(CODES.SECRET_FILE, [...at, 'secrets', i, 'path'], `"${path}" is given twice`, `first at secrets[${first}]`));
    else seen.set(path, i);
  });
  return out;
}

/** `security`/`exec` belong to processes, `container` to containers; each kind needs its own table. */
function runKindRules(doc: ParsedDocument<unknown>, runRaw: RawTable | undefined, at: string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  if (!runRaw) return out;
  const where = at.join('.');
  const type = runRaw.type ?? 'process';
  if (type === 'container') {
    for (const key of ['security', 'exec'] as const)
      if (runRaw[key] !== undefined)
        out.push(
          doc.diagnostic(
            CODES.PROCESS_FIELD_ON_CONTAINER,
            [...at, key],
            `[${where}.${key}] is for processes, but this recipe runs a container`,
            key === 'security' ? `confine containers with [${where}.container] user, privileged and resources` : `set the command in [${where}.container] command`,
          ),
        );
    if (runRaw.container === undefined)
      out.push(doc.diagnostic(CODES.MISSING_FIELD, [...at, 'container'], `a container recipe needs [${where}.container]`));
  } else if (type === 'process') {
    if (runRaw.container !== undefined)
      out.push(
        doc.diagnostic(
          CODES.CONTAINER_FIELD_ON_PROCESS,
          [...at, 'container'],
          `[${where}.container] is for containers, but this recipe runs a process`,
          'set type = "container" or remove the table',
        ),
      );
    if (runRaw.exec === undefined)
      out.push(doc.diagnostic(CODES.MISSING_FIELD, [...at, 'exec'], `a process recipe needs [${where}.exec] with a command`));
  }
  return out;
}

/** Replicas of one component would all claim the same host ports: more than one is refused when it maps any. */
function replicaRules(doc: ParsedDocument<unknown>, runRaw: RawTable | undefined, at: string[]): Diagnostic[] {
  const replicas = runRaw?.replicas;
  if (typeof replicas !== 'number' || replicas <= 1) return [];
  const ports = table(runRaw?.container)?.ports;
  if (!Array.isArray(ports) || ports.length === 0) return [];
  return [
    doc.diagnostic(
      CODES.INVALID_VALUE,
      [...at, 'replicas'],
      `replicas = ${replicas} with host ports: every replica would claim the same host ports`,
      'use replicas = 1, or remove [[lifecycle.run.container.ports]]',
    ),
  ];
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
        out.push(doc.diagnostic(CODES.ARTIFACT_BAD_URI, ['artifacts', i, 'uri'], `unsupported artifact scheme "${scheme}:"`, 'https, http, file, or a path relative to the recipe'));
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
