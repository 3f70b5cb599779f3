// Fast paths of the recipe and plan schemas: plain code that builds exactly what the schema would for a document it is sure
// is valid, and gives up (undefined) on anything else, which the schema (valibot, valid.ts) then validates and explains. So errors, their
// codes, paths and lines come from the schema as before; the fast path only skips its cost on the documents that pass
// (~60% of parsing a recipe). What it builds must equal the schema's output key for key and in key order: hashes and
// printed plans depend on it, and test/core/recipe-fast-path.test.ts checks it against the schema on generated documents.
import { LINUX_CAPABILITIES } from './capabilities.js';
import type { Plan } from './plan-schema.js';
import type { RecipeFile } from './recipe-schema.js';
import {
  array,
  attempt,
  bool,
  configValue,
  duration,
  fail,
  intAtLeast,
  keysWithin,
  nonEmpty,
  oneOf,
  record,
  scalar,
  str,
  table,
  type Raw,
} from './fast-path-readers.js';
import {
  healthCheckProblem,
  inIdRange,
  isComponentName,
  isReverseDnsName,
  isSemverRangeText,
  isSemverText,
  LITERAL_CHECK_KIND,
  USER_SPEC,
} from './schema-rules.js';
import { hasPlaceholder } from './template.js';

const capability = (v: unknown): string => (LINUX_CAPABILITIES.has(str(v)) ? (v as string) : fail());
const stringList = (v: unknown): string[] => array(v, str);

const ARTIFACT = new Set(['uri', 'sha256', 'unpack']);
const SHA256 = /^[0-9a-f]{64}$/i;
function artifact(v: unknown) {
  const t = table(v);
  keysWithin(t, ARTIFACT);
  const sha256 = str(t.sha256);
  if (!SHA256.test(sha256)) fail();
  return { uri: nonEmpty(t.uri), sha256, unpack: t.unpack === undefined ? false : bool(t.unpack) };
}

const EXEC = new Set(['command', 'args', 'env']);
function exec(v: unknown) {
  const t = table(v);
  keysWithin(t, EXEC);
  return {
    command: nonEmpty(t.command),
    args: t.args === undefined ? [] : stringList(t.args),
    env: t.env === undefined ? {} : record(t.env, str),
  };
}

const SECURITY = new Set(['user', 'no_new_privileges', 'capabilities']);
function security(v: unknown) {
  const t = table(v);
  keysWithin(t, SECURITY);
  const out: Raw = {};
  if (t.user !== undefined) {
    const user = str(t.user);
    if (!USER_SPEC.test(user) || !inIdRange(user)) fail();
    out.user = user;
  }
  out.no_new_privileges = t.no_new_privileges === undefined ? true : bool(t.no_new_privileges);
  out.capabilities = t.capabilities === undefined ? [] : array(t.capabilities, capability);
  return out;
}

const CONTAINER = new Set([
  'image',
  'runtime',
  'pull_policy',
  'network_mode',
  'user',
  'privileged',
  'command',
  'env',
  'ports',
  'mounts',
  'resources',
  'capabilities',
  'pid_mode',
  'ipc_mode',
  'uts_mode',
  'userns_mode',
  'devices',
]);
const PORT = new Set(['host_port', 'container_port']);
const MOUNT = new Set(['source', 'target', 'read_only']);
const RESOURCES = new Set(['memory_mb', 'pids_limit']);
const port = (v: unknown): number => (intAtLeast(v, 1) <= 65535 ? (v as number) : fail());
function container(v: unknown) {
  const t = table(v);
  keysWithin(t, CONTAINER);
  const out: Raw = {
    image: nonEmpty(t.image),
    runtime: t.runtime === undefined ? 'auto' : oneOf(t.runtime, ['auto', 'docker', 'podman']),
    pull_policy:
      t.pull_policy === undefined ? 'if-not-present' : oneOf(t.pull_policy, ['always', 'if-not-present', 'never']),
    network_mode: t.network_mode === undefined ? 'bridge' : nonEmpty(t.network_mode),
  };
  if (t.user !== undefined) {
    const user = nonEmpty(t.user);
    if (!inIdRange(user)) fail();
    out.user = user;
  }
  out.privileged = t.privileged === undefined ? false : bool(t.privileged);
  if (t.command !== undefined) out.command = stringList(t.command);
  out.env = t.env === undefined ? {} : record(t.env, str);
  out.ports =
    t.ports === undefined
      ? []
      : array(t.ports, (p) => {
          const pt = table(p);
          keysWithin(pt, PORT);
          return { host_port: port(pt.host_port), container_port: port(pt.container_port) };
        });
  out.mounts =
    t.mounts === undefined
      ? []
      : array(t.mounts, (m) => {
          const mt = table(m);
          keysWithin(mt, MOUNT);
          return {
            source: nonEmpty(mt.source),
            target: nonEmpty(mt.target),
            read_only: mt.read_only === undefined ? false : bool(mt.read_only),
          };
        });
  if (t.resources !== undefined) {
    const rt = table(t.resources);
    keysWithin(rt, RESOURCES);
    const resources: Raw = {};
    if (rt.memory_mb !== undefined) resources.memory_mb = intAtLeast(rt.memory_mb, 1);
    if (rt.pids_limit !== undefined) resources.pids_limit = intAtLeast(rt.pids_limit, 1);
    out.resources = resources;
  }
  if (t.capabilities !== undefined) out.capabilities = array(t.capabilities, capability);
  for (const key of ['pid_mode', 'ipc_mode', 'uts_mode', 'userns_mode'] as const)
    if (t[key] !== undefined) out[key] = nonEmpty(t[key]);
  if (t.devices !== undefined)
    out.devices = array(t.devices, (d) => (str(d).startsWith('/dev/') ? (d as string) : fail()));
  return out;
}

const HEALTH = new Set(['check', 'interval', 'timeout', 'failure_threshold']);
function health(v: unknown) {
  const t = table(v);
  keysWithin(t, HEALTH);
  const check = str(t.check);
  if (hasPlaceholder(check) ? !LITERAL_CHECK_KIND.test(check) : healthCheckProblem(check) !== undefined) fail();
  return {
    check,
    interval: duration(t.interval, 10_000),
    timeout: duration(t.timeout, 3_000),
    failure_threshold: t.failure_threshold === undefined ? 3 : intAtLeast(t.failure_threshold, 1),
  };
}

const RUN_KEYS = ['type', 'restart_policy', 'exec', 'security', 'container', 'health', 'update_strategy', 'replicas'];
const RUN = new Set(RUN_KEYS);
const SERVICE = new Set([...RUN_KEYS, 'requires', 'after', 'exports']);
/** A run (or, with `service`, a service: a run plus its order among siblings and its exports). */
function run(v: unknown, service = false): Raw {
  const t = table(v);
  keysWithin(t, service ? SERVICE : RUN);
  const out: Raw = {
    type: t.type === undefined ? 'process' : oneOf(t.type, ['process', 'container']),
    restart_policy:
      t.restart_policy === undefined ? 'always' : oneOf(t.restart_policy, ['always', 'on-failure', 'never']),
  };
  if (t.exec !== undefined) out.exec = exec(t.exec);
  if (t.security !== undefined) out.security = security(t.security);
  if (t.container !== undefined) out.container = container(t.container);
  if (t.health !== undefined) out.health = health(t.health);
  if (t.update_strategy !== undefined) out.update_strategy = oneOf(t.update_strategy, ['stop-first', 'start-first']);
  if (t.replicas !== undefined) out.replicas = intAtLeast(t.replicas, 0);
  if (service) {
    if (t.requires !== undefined) out.requires = stringList(t.requires);
    if (t.after !== undefined) out.after = stringList(t.after);
    if (t.exports !== undefined) out.exports = record(t.exports, scalar);
  }
  return out;
}

const INSTALL = new Set(['script', 'timeout']);
const LIFECYCLE = new Set(['install', 'run', 'services']);
function lifecycle(v: unknown): Raw {
  const t = table(v);
  keysWithin(t, LIFECYCLE);
  const out: Raw = {};
  if (t.install !== undefined) {
    const it = table(t.install);
    keysWithin(it, INSTALL);
    out.install = { script: nonEmpty(it.script), timeout: duration(it.timeout, 300_000) };
  }
  if (t.run !== undefined) out.run = run(t.run);
  if (t.services !== undefined) out.services = record(t.services, (s) => run(s, true));
  return out;
}

const METADATA = new Set(['name', 'version', 'description']);
const MEMBER = new Set(['name', 'recipe']);
const DEPENDENCY = new Set(['name', 'version', 'type']);
const RECIPE = new Set(['metadata', 'artifacts', 'config', 'exports', 'lifecycle', 'members', 'dependencies']);

function recipe(raw: unknown): RecipeFile {
  const t = table(raw);
  keysWithin(t, RECIPE);
  const mt = table(t.metadata);
  keysWithin(mt, METADATA);
  const name = str(mt.name);
  const version = str(mt.version);
  if (!isReverseDnsName(name) || !isSemverText(version)) fail();
  const metadata: Raw = { name, version };
  if (mt.description !== undefined) metadata.description = str(mt.description);
  const out: Raw = { metadata, artifacts: t.artifacts === undefined ? [] : array(t.artifacts, artifact) };
  if (t.config !== undefined) out.config = record(t.config, configValue);
  if (t.exports !== undefined) out.exports = record(t.exports, scalar);
  if (t.lifecycle !== undefined) out.lifecycle = lifecycle(t.lifecycle);
  if (t.members !== undefined)
    out.members = array(t.members, (m) => {
      const mt2 = table(m);
      keysWithin(mt2, MEMBER);
      return { name: str(mt2.name), recipe: nonEmpty(mt2.recipe) };
    });
  out.dependencies =
    t.dependencies === undefined
      ? []
      : array(t.dependencies, (d) => {
          const dt = table(d);
          keysWithin(dt, DEPENDENCY);
          const depName = str(dt.name);
          if (!isReverseDnsName(depName)) fail();
          const dep: Raw = { name: depName };
          if (dt.version !== undefined) {
            const range = str(dt.version);
            if (!isSemverRangeText(range)) fail();
            dep.version = range;
          }
          dep.type = dt.type === undefined ? 'hard' : oneOf(dt.type, ['hard', 'ordering']);
          return dep;
        });
  return out as RecipeFile;
}

const PLAN = new Set(['components']);
const PLAN_ENTRY = new Set(['name', 'recipe', 'config']);

function plan(raw: unknown): Plan {
  const t = table(raw);
  keysWithin(t, PLAN);
  return {
    components:
      t.components === undefined
        ? []
        : array(t.components, (e) => {
            const et = table(e);
            keysWithin(et, PLAN_ENTRY);
            const name = str(et.name);
            if (!isComponentName(name)) fail();
            const entry: Plan['components'][number] = { name, recipe: nonEmpty(et.recipe) };
            if (et.config !== undefined)
              entry.config = record(et.config, configValue) as NonNullable<typeof entry.config>;
            return entry;
          }),
  };
}

/** The recipe the schema would make of `raw`, when it is sure `raw` is valid; undefined to let the schema decide (and explain). */
export const fastRecipe = (raw: unknown): RecipeFile | undefined => attempt(() => recipe(raw));

/** The plan the schema would make of `raw`, when it is sure `raw` is valid; undefined to let the schema decide (and explain). */
export const fastPlan = (raw: unknown): Plan | undefined => attempt(() => plan(raw));
