// The recipe format of SPEC §2 as a zod schema over smol-toml, plus the cross-field rules a schema cannot say.
import { posix } from 'node:path';
import { z } from 'zod';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import { parseDuration } from './duration.js';
import { LINUX_CAPABILITIES } from './capabilities.js';
import {
  durationText,
  issue,
  portNumber,
  positiveInt,
  reverseDnsName,
  semverRangeText,
  semverText,
} from './schema-rules.js';
import { parseTomlDocument, type ParsedDocument } from './toml-document.js';
import type { TomlPath } from './toml-locate.js';

const duration = (fallback: string) =>
  durationText.default(fallback).transform((v) => parseDuration(v) as number);

const stringMap = z.record(z.string(), z.string());

const artifact = z.strictObject({
  uri: z.string().min(1),
  sha256: z.string().superRefine((v, ctx) => {
    if (!/^[0-9a-f]{64}$/i.test(v))
      issue(ctx, CODES.ARTIFACT_UNSIGNED, `"${v}" is not a sha256 digest`, '64 hexadecimal characters');
  }),
  unpack: z.boolean().default(false),
});

const exec = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: stringMap.default({}),
});

/** Capabilities granted to a process or a container: exactly these, none when empty. */
const capabilityList = z.array(
  z.string().superRefine((v, ctx) => {
    if (!LINUX_CAPABILITIES.has(v))
      issue(ctx, CODES.BAD_CAPABILITY, `"${v}" is not a Linux capability`, 'e.g. "CAP_NET_BIND_SERVICE"');
  }),
);

const security = z.strictObject({
  user: z
    .string()
    .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/, 'expected "user" or "user:group"')
    .optional(),
  no_new_privileges: z.boolean().default(true),
  capabilities: capabilityList.default([]),
});

const container = z.strictObject({
  image: z.string().min(1),
  runtime: z.enum(['auto', 'docker', 'podman']).default('auto'),
  pull_policy: z.enum(['always', 'if-not-present', 'never']).default('if-not-present'),
  network_mode: z.string().min(1).default('bridge'),
  user: z.string().min(1).optional(),
  privileged: z.boolean().default(false),
  command: z.array(z.string()).optional(),
  env: stringMap.default({}),
  ports: z.array(z.strictObject({ host_port: portNumber, container_port: portNumber })).default([]),
  mounts: z
    .array(z.strictObject({ source: z.string().min(1), target: z.string().min(1), read_only: z.boolean().default(false) }))
    .default([]),
  resources: z.strictObject({ memory_mb: positiveInt.optional(), pids_limit: positiveInt.optional() }).optional(),
  // Every capability is dropped (CapDrop ALL) unless listed here. Optional without a default (read it as `?? []`):
  // a default would enter every parsed recipe and so change the hash of components that never set it.
  capabilities: capabilityList.optional(),
});

const healthCheck = z.string().superRefine((v, ctx) => {
  const bad = (why: string) =>
    issue(ctx, CODES.BAD_HEALTH_CHECK, `"${v}" is not a health check: ${why}`, 'http(s)://…, tcp://host:port or cmd:<command line>');
  if (v.startsWith('cmd:')) {
    if (v.slice(4).trim() === '') bad('the command is empty');
    return;
  }
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return bad('not a URL');
  }
  if (url.protocol === 'tcp:') {
    if (!url.hostname || !url.port || url.port === '0') bad('tcp:// needs host:port with a port from 1 to 65535');
  } else if (url.protocol !== 'http:' && url.protocol !== 'https:') bad(`unsupported scheme ${url.protocol}`);
});

const health = z.strictObject({
  check: healthCheck,
  interval: duration('10s'),
  timeout: duration('3s'),
  failure_threshold: positiveInt.default(3),
});

const run = z.strictObject({
  type: z.enum(['process', 'container']).default('process'),
  restart_policy: z.enum(['always', 'on-failure', 'never']).default('always'),
  exec: exec.optional(),
  security: security.optional(),
  container: container.optional(),
  health: health.optional(),
  // The next two have no zod default on purpose (read them as `?? 'stop-first'` and `?? 1`): a default would enter
  // every parsed recipe and change the hash of every existing component, restarting a whole device on upgrade.
  // How a new hash replaces a running instance: stop the old first, or start the new and stop the old once healthy.
  update_strategy: z.enum(['stop-first', 'start-first']).optional(),
  // Instances of the component; 0 keeps it in the plan with nothing running. More than one cannot share host ports.
  replicas: z.number().int().min(0).optional(),
});

const dependency = z.strictObject({
  name: reverseDnsName,
  version: semverRangeText.optional(),
  type: z.enum(['hard', 'ordering']).default('hard'),
});

export const recipeSchema = z.strictObject({
  metadata: z.strictObject({
    name: reverseDnsName,
    version: semverText,
    description: z.string().optional(),
  }),
  artifacts: z.array(artifact).default([]),
  lifecycle: z.strictObject({
    install: z.strictObject({ script: z.string().min(1), timeout: duration('5m') }).optional(),
    run,
  }),
  dependencies: z.array(dependency).default([]),
});

/** A recipe as parsed: defaults applied, durations in milliseconds. */
export type Recipe = z.output<typeof recipeSchema>;
export type RecipeDependency = Recipe['dependencies'][number];
export type RunSpec = Recipe['lifecycle']['run'];

export interface ParsedRecipe {
  file: string;
  recipe?: Recipe;
  diagnostics: Diagnostic[];
  /** Locates later diagnostics (from resolution) in this file. */
  doc?: ParsedDocument<Recipe>;
}

/** Parses one recipe file. Pure: `file` is only used for messages and to resolve relative artifact paths. */
export function parseRecipe(file: string, text: string): ParsedRecipe {
  const doc = parseTomlDocument(file, text, recipeSchema, missingRecipeField);
  const diagnostics = [...doc.diagnostics];
  if (doc.raw !== undefined) {
    diagnostics.push(...runKindRules(doc), ...replicaRules(doc), ...artifactRules(doc, file));
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

/** `security`/`exec` belong to processes, `container` to containers; each kind needs its own table. */
function runKindRules(doc: ParsedDocument<unknown>): Diagnostic[] {
  const out: Diagnostic[] = [];
  const runRaw = table(table(table(doc.raw)?.lifecycle)?.run);
  if (!runRaw) return out;
  const type = runRaw.type ?? 'process';
  if (type === 'container') {
    for (const key of ['security', 'exec'] as const)
      if (runRaw[key] !== undefined)
        out.push(
          doc.diagnostic(
            CODES.PROCESS_FIELD_ON_CONTAINER,
            ['lifecycle', 'run', key],
            `[lifecycle.run.${key}] is for processes, but this recipe runs a container`,
            key === 'security' ? 'confine containers with [lifecycle.run.container] user, privileged and resources' : 'set the command in [lifecycle.run.container] command',
          ),
        );
    if (runRaw.container === undefined)
      out.push(doc.diagnostic(CODES.MISSING_FIELD, ['lifecycle', 'run', 'container'], 'a container recipe needs [lifecycle.run.container]'));
  } else if (type === 'process') {
    if (runRaw.container !== undefined)
      out.push(
        doc.diagnostic(
          CODES.CONTAINER_FIELD_ON_PROCESS,
          ['lifecycle', 'run', 'container'],
          '[lifecycle.run.container] is for containers, but this recipe runs a process',
          'set type = "container" or remove the table',
        ),
      );
    if (runRaw.exec === undefined)
      out.push(doc.diagnostic(CODES.MISSING_FIELD, ['lifecycle', 'run', 'exec'], 'a process recipe needs [lifecycle.run.exec] with a command'));
  }
  return out;
}

/** Replicas of one component would all claim the same host ports: more than one is refused when it maps any. */
function replicaRules(doc: ParsedDocument<unknown>): Diagnostic[] {
  const runRaw = table(table(table(doc.raw)?.lifecycle)?.run);
  const replicas = runRaw?.replicas;
  if (typeof replicas !== 'number' || replicas <= 1) return [];
  const ports = table(runRaw?.container)?.ports;
  if (!Array.isArray(ports) || ports.length === 0) return [];
  return [
    doc.diagnostic(
      CODES.INVALID_VALUE,
      ['lifecycle', 'run', 'replicas'],
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
