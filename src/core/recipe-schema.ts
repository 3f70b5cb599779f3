// The recipe format of SPEC §2 as a schema (valibot, through valid.ts) over smol-toml, plus the cross-field rules a schema cannot say.
import { CODES } from './errors.js';
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
} from './schema-rules.js';
import * as v from 'valibot';
import { check, int, minLength, number, record, refine, strictObject, type RefinementCtx } from './valid.js';
import { hasPlaceholder, SECRET_NAME } from './template.js';

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
  mounts: v.optional(
    v.array(strictObject({ source: nonEmpty(), target: nonEmpty(), read_only: v.optional(v.boolean(), false) })),
    [],
  ),
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
  if (why !== undefined)
    issue(
      ctx,
      CODES.BAD_HEALTH_CHECK,
      `"${t}" is not a health check: ${why}`,
      'http(s)://…, tcp://host:port or cmd:<command line>',
    );
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
  name: v.pipe(
    v.string(),
    v.regex(SECRET_NAME, 'a secret\'s name is letters, digits, "_" and "-" (at most 63), as its file secrets/NAME.age'),
  ),
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
    check<string>(
      (p) => !p.startsWith('/') && !p.split('/').some((seg) => seg === '..' || seg === '.' || seg === ''),
      'a path inside the component\'s work directory, like "run/update.lock": relative, without "..", "." or empty parts',
    ),
  ),
  lock_timeout: v.optional(
    v.pipe(
      durationText,
      v.transform((t) => parseDuration(t) as number),
    ),
  ),
});

/** A configuration value: a scalar, or a table of them (`[config.http]`). Interpolated into strings by `{{config.…}}`. */
type ConfigValue = string | number | boolean | { [key: string]: ConfigValue };
const configValue: v.GenericSchema<ConfigValue> = v.lazy(() =>
  v.union([v.string(), number(), v.boolean(), record(v.string(), configValue)]),
);
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
