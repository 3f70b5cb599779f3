// The error catalogue: every `KS_*` code Keystone emits, once, with its kind, the exit code a program stops with when
// the code ends it, the HTTP status the API answers it with, and a one-line meaning. Pure data: the one source that
// CODES (errors.ts), exitCodeOf (errors.ts) and docs/errors.md (lint/errors-doc.mjs) read. Codes are stable:
// scripts and tests depend on them; add one here before emitting it (a literal not listed here fails tsc where it is
// typed as ErrorCode, and test/core/error-catalogue.test.ts everywhere else).

/**
 * - `invalid`: the input does not validate (a revision, a flag, a configuration file, a request): fix it.
 * - `refused`: the input is well-formed but not trusted or not permitted here (a signature, a permission, a policy).
 * - `stalled`: an operation failed and will not succeed by itself: someone has to look.
 * - `waiting`: held back on purpose until something changes (a lock, a gate, a shutdown); nothing is wrong.
 * - `transient`: a failure outside Keystone that is retried (a network, a busy server).
 */
export type ErrorKind = 'invalid' | 'refused' | 'stalled' | 'waiting' | 'transient';
export const ERROR_KINDS: readonly ErrorKind[] = ['invalid', 'refused', 'stalled', 'waiting', 'transient'];

/** SPEC §9: 0 ok, 1 the operation failed, 2 bad input (invalid, unsigned, untrusted). */
export type ExitCode = 0 | 1 | 2;

export interface CatalogueEntry {
  readonly kind: ErrorKind;
  /** What keystone or keystonectl exits with when an error with this code ends it (exitCodeOf, errors.ts). */
  readonly exit: 1 | 2;
  /** The status the API answers with this code, where it does. */
  readonly http?: number;
  /** One line: what happened. */
  readonly meaning: string;
  /** The page of docs/ that tells more, where one does. */
  readonly see?: string;
  /** Why no code in src/ emits it (kept for readers of old reports and logs), when none does. */
  readonly unused?: string;
}

type Extra = Partial<Pick<CatalogueEntry, 'exit' | 'http' | 'see' | 'unused'>>;
const entry = (kind: ErrorKind, exit: 1 | 2) => (meaning: string, extra: Extra = {}): CatalogueEntry => ({ kind, exit, meaning, ...extra });
const invalid = entry('invalid', 2);
const refused = entry('refused', 2);
const stalled = entry('stalled', 1);
const waiting = entry('waiting', 1);
const transient = entry('transient', 1);
/** An answer of the API: keystonectl exits 2 for a 400 or a 404 (what it was asked was wrong), else 1. */
const api = (kind: ErrorKind, http: number, meaning: string, extra: Extra = {}): CatalogueEntry => ({ kind, exit: http === 400 || http === 404 ? 2 : 1, http, meaning, see: 'api.md', ...extra });

export const CATALOGUE = {
  // Revisions: recipes, plans, fleet.toml (SPEC §4–8, docs/formats.md). Reported as diagnostics of KS_INVALID_REVISION.
  KS_INVALID_REVISION: invalid('the revision cannot be used: every diagnostic is listed, each with its file, TOML path, line and code', { see: 'formats.md' }),
  KS_TOML_SYNTAX: invalid('a TOML file does not parse (or is not UTF-8)', { see: 'formats.md' }),
  KS_UNKNOWN_KEY: invalid('a table has a key the format does not know', { see: 'formats.md' }),
  KS_MISSING_FIELD: invalid('a required key is missing', { see: 'formats.md' }),
  KS_INVALID_TYPE: invalid('a value has the wrong TOML type', { see: 'formats.md' }),
  KS_INVALID_VALUE: invalid('a value is outside what the key accepts', { see: 'formats.md' }),
  KS_BAD_DURATION: invalid('a duration is not a Go-style duration above zero and at most a week', { see: 'formats.md' }),
  KS_BAD_SEMVER: invalid('a version is not exactly a semantic version', { see: 'formats.md' }),
  KS_BAD_SEMVER_RANGE: invalid('a version range does not parse', { see: 'formats.md' }),
  KS_BAD_NAME: api('invalid', 400, 'a component, recipe or device name is not one (letters, digits, ".", "_" and "-", at most 63 characters)', { see: 'formats.md' }),
  KS_BAD_HEALTH_CHECK: invalid('a health check is not http(s)://, tcp://host:port or cmd:', { see: 'formats.md' }),
  KS_BAD_CAPABILITY: invalid('a capability is not a Linux capability name', { see: 'formats.md' }),
  KS_BAD_LABEL: invalid('a label key or value is not one', { see: 'fleets.md' }),
  KS_ARTIFACT_UNSIGNED: refused('an artifact has no valid sha256 digest', { see: 'formats.md' }),
  KS_ARTIFACT_BAD_URI: refused('an artifact names no fetchable scheme, or a path outside the repository', { see: 'formats.md' }),
  KS_PROCESS_FIELD_ON_CONTAINER: invalid('a process-only table (security, exec) in a container recipe', { see: 'formats.md' }),
  KS_CONTAINER_FIELD_ON_PROCESS: invalid('a container table in a process recipe', { see: 'formats.md' }),
  KS_DUPLICATE_COMPONENT: invalid('two plan entries (or replicas) claim the same component name', { see: 'formats.md' }),
  KS_PATH_ESCAPE: refused('a path points outside the repository', { see: 'formats.md' }),
  KS_FILE_NOT_FOUND: invalid('a file the revision names is not there', { see: 'formats.md' }),
  KS_FILE_TOO_LARGE: invalid('a file is over its size limit', { see: 'formats.md' }),
  KS_NOT_A_FILE: invalid('a path the revision names is not a regular file', { see: 'formats.md' }),
  KS_DEP_MISSING: invalid('a dependency names no component of the plan', { see: 'formats.md' }),
  KS_DEP_AMBIGUOUS: invalid('a dependency matches more than one component', { see: 'formats.md' }),
  KS_DEP_VERSION_MISMATCH: invalid("a dependency's version is outside the range asked for", { see: 'formats.md' }),
  KS_DEP_CYCLE: invalid('the dependencies form a cycle', { see: 'formats.md' }),
  KS_RECIPE_KIND: invalid("a recipe's kind is not one Keystone knows", { see: 'composites.md' }),
  KS_MEMBER_UNKNOWN: invalid('a composite names a member it does not have', { see: 'composites.md' }),
  KS_COMPOSITE_NESTED: invalid('a composite inside a composite', { see: 'composites.md' }),
  KS_TEMPLATE_SYNTAX: invalid('a {{…}} placeholder does not parse', { see: 'composites.md' }),
  KS_TEMPLATE_SHELL_CONTEXT: invalid('a placeholder stands where one quoted shell word would not be exactly its value', { see: 'composites.md' }),
  KS_CONFIG_UNKNOWN: invalid('a placeholder names a configuration key the recipe does not declare', { see: 'composites.md' }),
  KS_CONFIG_NOT_SCALAR: invalid('a configuration value is not a string, number or boolean', { see: 'composites.md' }),
  KS_CONFIG_OVERRIDE_UNKNOWN: invalid('a plan overrides a configuration key the recipe does not declare', { see: 'composites.md' }),
  KS_BIND_UNKNOWN: invalid('a bind names an export no component has', { see: 'composites.md' }),
  KS_EXPORT_COLLISION: invalid('two components export the same name', { see: 'composites.md' }),
  KS_FLEET_MISSING: invalid('the repository has no fleet.toml where one is needed', { see: 'fleets.md' }),
  KS_FLEET_DUPLICATE_TARGET: invalid('fleet.toml names a target twice', { see: 'fleets.md' }),
  KS_FLEET_TARGET_EMPTY: invalid('a fleet target selects no device by any rule', { see: 'fleets.md' }),
  KS_FLEET_PLAN_INVALID: invalid("a fleet target's plan does not load", { see: 'fleets.md' }),
  KS_FLEET_PLAN_PATH: invalid("a fleet target's plan path is not a plans/*.toml of the repository", { see: 'fleets.md' }),
  KS_FLEET_UNKNOWN_COMPONENT: invalid('fleet.toml names a component no plan has', { see: 'fleets.md' }),
  KS_FLEET_NO_TARGET: invalid('no fleet.toml target selects this device', { see: 'fleets.md' }),
  KS_ROLLOUT_DUPLICATE_WAVE: invalid('[rollout] names a wave twice', { see: 'rollouts.md' }),
  KS_ROLLOUT_WAVE_RULE: invalid('a rollout wave has no rule, or more than one', { see: 'rollouts.md' }),
  KS_ROLLOUT_PERCENTS: invalid("the waves' percentages do not rise to 100", { see: 'rollouts.md' }),
  KS_SECRET_PLACEMENT: invalid('a {{secret.NAME}} outside an environment variable\'s value', { see: 'secrets.md' }),
  KS_SECRET_FILE: invalid('a [[lifecycle.run.secrets]] file is not a plain file name (or an absolute path in a container)', { see: 'secrets.md' }),
  KS_UPDATE_LOCK: waiting('a component holds its update lock: the update waits until it lets go', { see: 'agent.md' }),

  // Command lines and the agent's configuration file (SPEC §9, docs/agent.md).
  KS_USAGE: invalid('a command line (or a setting) is not one the program takes; thrown by an operation it is exit code 1', { see: 'spec.md' }),
  KS_INVALID_CONFIG: invalid('the configuration file is invalid: every problem with its line', { see: 'agent.md' }),
  KS_CONFIG_SOURCE: invalid('the configuration gives no source, or both --repo and --dir', { see: 'agent.md' }),
  KS_CONFIG_CONFLICT: invalid('two settings of the configuration cannot both hold', { see: 'agent.md' }),
  KS_CONFIG_SECRET_INLINE: invalid('a secret (a token, a webhook secret) written in the configuration file instead of a file of its own', { see: 'agent.md' }),
  KS_FILE_UNREADABLE: invalid('a file the configuration names cannot be read', { see: 'agent.md' }),
  KS_ENGINE_SOCKET_INVALID: invalid('--engine-socket is not a socket path or a tcp:// address', { see: 'containers.md' }),
  KS_ENGINE_SOCKET_MISSING: invalid('--engine-socket names a socket that is not there', { see: 'containers.md' }),
  KS_DOCKER_HOST_UNSUPPORTED: invalid('DOCKER_HOST names a scheme the agent does not speak (ssh://, npipe://)', { see: 'containers.md' }),
  KS_CONFIG_UNSAFE: refused('another user could change the configuration file', { see: 'security.md' }),
  KS_TRUSTED_KEY_UNSAFE: refused('another user could change a trusted key file', { see: 'security.md' }),
  KS_SECRET_FILE_UNSAFE: refused('another user could read or change a secret file the agent reads', { see: 'security.md' }),
  KS_INIT_WRITE_FAILED: stalled('keystone init cannot write the configuration file', { see: 'install.md' }),
  KS_API_LISTEN_FAILED: stalled('the API cannot listen at the address asked for (taken, not this machine\'s)', { see: 'agent.md' }),
  KS_API_TOKEN_INVALID: stalled('<state-dir>/api-token is unsafe or not a token', { see: 'api.md' }),

  // Signatures and trust (SPEC §5, docs/signing.md). Refused as a whole: exit code 2.
  KS_UNSIGNED: refused('the revision has no SHA256SUMS signature', { see: 'signing.md' }),
  KS_SIGNATURE_MALFORMED: refused('a signature file does not parse', { see: 'signing.md' }),
  KS_SIGNATURE_TOO_LARGE: refused('SHA256SUMS.minisig is over its size limit', { see: 'signing.md' }),
  KS_SIGNATURE_INVALID: refused('a signature does not match the signed file', { see: 'signing.md' }),
  KS_SIGNATURE_NONCANONICAL: refused('a signature is non-canonical (malleated)', { see: 'signing.md' }),
  KS_TRUSTED_COMMENT_INVALID: refused('a trusted comment was altered', { see: 'signing.md' }),
  KS_SIGNATURE_NO_TIMESTAMP: refused('a trusted comment has no timestamp, so replay cannot be ruled out', { see: 'signing.md' }),
  KS_SIGNATURE_WRONG_REF: refused('the signature was made for another branch', { see: 'signing.md' }),
  KS_SIGNATURE_NO_REF: refused('the signature names no branch, and one is required', { see: 'signing.md' }),
  KS_SIGNATURE_TOO_OLD: refused('the signature is older than the newest one this device applied (a rollback)', { see: 'signing.md' }),
  KS_SIGNATURE_FROM_FUTURE: refused("the signature's time lies ahead of the device's clock", { see: 'signing.md' }),
  KS_SIGNATURE_REPLAYED: refused('an older signed revision offered again', { see: 'signing.md' }),
  KS_UNTRUSTED_KEY: refused('signed by a key that is not trusted here', { see: 'signing.md' }),
  KS_THRESHOLD_NOT_MET: refused('fewer trusted keys signed than --threshold asks', { see: 'signing.md' }),
  KS_WEAK_KEY: refused('a key is not a strong minisign Ed25519 key', { see: 'signing.md' }),
  KS_KEY_MALFORMED: refused('a key file does not parse', { see: 'signing.md' }),
  KS_KEY_PASSWORD: refused('the secret key is password-protected and no (or the wrong) password was given', { see: 'signing.md' }),
  KS_SUMS_MALFORMED: refused('SHA256SUMS has a line that is not "<sha256>  <path>"', { see: 'signing.md' }),
  KS_SUMS_TOO_LARGE: refused('SHA256SUMS is over its size limit', { see: 'signing.md' }),
  KS_SUMS_CHANGED: stalled('sign --append: SHA256SUMS changed since the others signed', { see: 'signing.md' }),
  KS_DIGEST_MISMATCH: refused("a file's digest is not the one SHA256SUMS lists", { see: 'signing.md' }),
  KS_FILE_NOT_SIGNED: refused('a file of the revision is not listed in SHA256SUMS', { see: 'signing.md' }),
  KS_SIGNED_FILE_MISSING: refused('a file SHA256SUMS lists is not in the revision', { see: 'signing.md' }),
  KS_HISTORY_REWRITE: refused('the followed branch moved to a commit that does not descend from the applied one', { see: 'gitops.md' }),
  KS_HISTORY_UNVERIFIED: refused('the history between the applied commit and the new one is longer than the agent checks', { see: 'gitops.md' }),

  // The device's identity, certificates and revocations (SPEC §13, docs/fleet-reports.md).
  KS_IDENTITY_MISSING: refused("a key file of the device is gone while the state directory says it had one", { see: 'fleet-reports.md' }),
  KS_IDENTITY_UNSAFE: refused('a key file of the device, or its directory, is open to another user', { see: 'fleet-reports.md' }),
  KS_IDENTITY_MALFORMED: refused('a key file of the device does not parse', { see: 'fleet-reports.md' }),
  KS_CERT_MALFORMED: refused('a certificate is not the format keystonectl enroll writes', { see: 'fleet-reports.md' }),
  KS_CERT_UNKNOWN_KEY: refused('a certificate signed by a key that is not a trusted enrolment key', { see: 'fleet-reports.md' }),
  KS_CERT_BAD_SIGNATURE: refused("a certificate's signature does not verify", { see: 'fleet-reports.md' }),
  KS_CERT_WRONG_DEVICE: refused('a certificate for another device', { see: 'fleet-reports.md' }),
  KS_CERT_EXPIRED: refused('a certificate past its expiry, or issued in the future', { see: 'fleet-reports.md' }),
  KS_CERT_REVOKED: refused('a certificate devices/revoked.toml names', { see: 'fleet-reports.md' }),
  KS_CERT_OTHER_KEY: refused("this device's certificate names other keys than it holds (reinstalled, not enrolled again)", { see: 'fleet-reports.md' }),
  KS_REVOCATIONS_INVALID: invalid('devices/revoked.toml does not parse or breaks its schema', { see: 'fleet-reports.md' }),
  KS_NO_DEVICES_DIR: waiting('the commit has no devices/ directory: no report verifies, the commit stays held', { see: 'fleet-reports.md' }),
  KS_NO_ENROLLMENT_KEY: waiting('the fleet counts only enrolled devices and this one has no --enrollment-key: the commit stays held', { see: 'fleet-reports.md' }),

  // Secrets (SPEC §16, docs/secrets.md).
  KS_SECRET_MISSING: refused('a secret the plan reads has no secrets/NAME.age', { see: 'secrets.md' }),
  KS_SECRET_NOT_RECIPIENT: refused('a secret is not encrypted to this device\'s target', { see: 'secrets.md' }),
  KS_SECRET_CORRUPT: refused('a secret or target key file does not decrypt or parse', { see: 'secrets.md' }),
  KS_SECRET_NO_TARGET: refused('the plan reads secrets and this device is in no fleet target', { see: 'secrets.md' }),
  KS_SECRET_OPERATOR: refused("keystonectl secret refuses: the operator's identity, a target, or the repository's files are not as it needs", { see: 'secrets.md' }),
  KS_SECRET_UNAVAILABLE: stalled('a component reads secrets and the runtime was given none', { see: 'secrets.md' }),
  KS_SECRET_NOT_TEXT: stalled('a secret read as an environment variable is not UTF-8 text without NUL', { see: 'secrets.md' }),
  KS_SECRET_PATH_TAKEN: stalled("a secret file's path is taken by something the agent did not make", { see: 'secrets.md' }),
  KS_SECRET_FILE_FAILED: stalled('writing a secret file failed', { see: 'secrets.md' }),
  KS_SECRET_SHARED_USER: waiting('a warning: a component that reads secrets runs as a user other components share', { see: 'secrets.md', exit: 1 }),

  // Device policy (docs/security.md): what a revision may ask of this device. The agent refuses such a revision and
  // keeps running (a runtime raises the code again before it creates anything: exit code 1 should one end a program);
  // apply-dry reports them under KS_NOT_PERMITTED, exit code 2.
  KS_NOT_PERMITTED: refused('apply-dry: the plan asks for what the device policy does not allow (each problem with its code)', { see: 'apply-dry.md' }),
  KS_CONTAINER_NOT_PERMITTED: refused('a container asks for what the device policy does not allow (privileged, host namespaces)', { see: 'security.md', exit: 1 }),
  KS_MOUNT_NOT_PERMITTED: refused('a bind mount outside the paths the device policy allows', { see: 'security.md', exit: 1 }),
  KS_CAPABILITY_NOT_PERMITTED: refused('a capability the device policy does not grant', { see: 'security.md', exit: 1 }),
  KS_DEVICE_NOT_PERMITTED: refused('a host device the device policy does not allow', { see: 'security.md', exit: 1 }),
  KS_ROOT_NOT_PERMITTED: refused('a component runs as root and the device policy does not allow it', { see: 'security.md', exit: 1 }),

  // Artifacts (docs/formats.md): refused downloads and archives are exit code 2, a server that does not answer 1.
  KS_ARTIFACT_DIGEST_MISMATCH: refused("an artifact's bytes do not match its sha256", { see: 'formats.md' }),
  KS_ARTIFACT_TOO_LARGE: refused('an artifact is over its size limit', { see: 'formats.md' }),
  KS_ARTIFACT_FETCH_FAILED: transient('an artifact could not be downloaded', { see: 'formats.md' }),
  KS_ARTIFACT_NOT_FOUND: invalid('an artifact file of the repository is not there', { see: 'formats.md' }),
  KS_ARTIFACT_INSTALL_UNSAFE: refused('installing an artifact would replace what it must not (too deep, a link)', { see: 'formats.md' }),
  KS_UNPACK_UNSAFE_ENTRY: refused('an archive entry escapes, links out, or is a device', { see: 'formats.md' }),
  KS_UNPACK_TOO_LARGE: refused('an archive inflates past its limit', { see: 'formats.md' }),
  KS_UNPACK_TOO_DEEP: refused('an archive nests deeper than the limit', { see: 'formats.md' }),
  KS_UNPACK_FORMAT: refused('an archive is corrupt or of an unknown format', { see: 'formats.md' }),
  KS_DISK_SPACE: waiting("a revision's downloads do not fit on the disk: it waits, and the device keeps what it runs", { see: 'agent.md' }),

  // Runtimes: processes and containers (docs/agent.md, docs/containers.md).
  KS_INSTALL_FAILED: stalled("a component's install step failed", { see: 'agent.md' }),
  KS_INSTALL_TIMEOUT: stalled("a component's install step ran past its timeout", { see: 'agent.md' }),
  KS_INSTALL_ABORTED: waiting('an install was aborted (a newer revision, a stop)', { see: 'agent.md' }),
  KS_START_FAILED: api('stalled', 502, 'a component did not start (or a started one failed)', { see: 'agent.md' }),
  KS_STOP_FAILED: api('stalled', 502, 'a component did not stop', { see: 'agent.md' }),
  KS_RESTART_FAILED: api('stalled', 502, 'a restart asked for through the API failed'),
  KS_USER_UNKNOWN: stalled("a recipe's user or group does not exist on this device", { see: 'agent.md' }),
  KS_WORK_DIR_UNREACHABLE: stalled("the component's user cannot reach its work directory", { see: 'agent.md' }),
  KS_WORK_DIR_INVALID: stalled('a work directory is not a directory', { see: 'agent.md' }),
  KS_WRONG_RUNTIME: stalled('an instance handed to a runtime of the other kind', { see: 'agent.md' }),
  KS_RUNTIME_UNAVAILABLE: stalled('a component of a kind this device has no runtime for (containers without an engine)', { see: 'containers.md' }),
  KS_CONTAINER_ENGINE_UNAVAILABLE: transient('no container engine answers at any endpoint tried', { see: 'containers.md' }),
  KS_CONTAINER_NOT_OWNED: refused('a container with our name that the agent did not make', { see: 'containers.md', exit: 1 }),
  KS_IMAGE_MISSING: stalled('an image is not on the device and may not be pulled', { see: 'containers.md' }),
  KS_IMAGE_PULL_FAILED: transient('pulling an image failed', { see: 'containers.md' }),
  KS_MOUNT_SOURCE_MISSING: stalled("a bind mount's host path is not there", { see: 'containers.md' }),
  KS_MOUNT_SOURCE_INVALID: invalid("a bind mount's host path is not absolute, or not a directory or file", { see: 'containers.md', exit: 1 }),
  KS_LOG_UNREADABLE: api('stalled', 500, "a component's log cannot be read (permission, a link where a log should be)", { see: 'agent.md' }),
  KS_LOG_NO_SPACE: transient('the file system is full: a log was truncated without keeping a copy', { see: 'agent.md' }),

  // The state directory and its SQLite store (docs/agent.md).
  KS_STATE_DIR_UNSAFE: refused('the state directory could be written by another user', { see: 'security.md' }),
  KS_STATE_DIR_LOCKED: waiting('another agent holds the state directory', { see: 'agent.md' }),
  KS_STATE_OPEN_FAILED: stalled("the state directory's lock or database cannot be opened", { see: 'agent.md' }),
  KS_STATE_CORRUPT: stalled('the state database is not a usable SQLite database: move it aside', { see: 'agent.md' }),
  KS_STATE_INVALID: stalled('the state store was used in a way it refuses (a write where only reads are allowed, a bad record)', { see: 'agent.md' }),
  KS_STATE_NOT_FOUND: stalled('the state store has no such component', { see: 'agent.md' }),
  KS_STATE_SCHEMA_TOO_NEW: stalled('the state database was written by a newer agent', { see: 'agent.md' }),
  KS_STATE_BUSY: waiting('another process holds the state database', { see: 'agent.md' }),
  KS_STATE_DISK_FULL: stalled('the state database cannot write: the disk is full', { see: 'agent.md' }),

  // Git (docs/gitops.md). An operation failed: exit code 1.
  KS_GIT_REF_NOT_FOUND: stalled('the repository has no such branch or ref', { see: 'gitops.md' }),
  KS_GIT_READ_FAILED: stalled('reading the Git repository failed', { see: 'gitops.md' }),
  KS_GIT_FAILED: transient('a Git operation failed for a reason without a code of its own', { see: 'gitops.md' }),
  KS_GIT_BAD_URL: invalid('the repository URL is not one the agent fetches from', { see: 'gitops.md', exit: 1 }),
  KS_GIT_CREDENTIALS_IN_URL: refused('the repository URL carries credentials: give --git-token-file instead', { see: 'gitops.md', exit: 1 }),
  KS_GIT_AUTH_FAILED: refused('the Git server refused the credentials', { see: 'gitops.md', exit: 1 }),
  KS_GIT_REPO_NOT_FOUND: stalled('the Git server has no such repository', { see: 'gitops.md' }),
  KS_GIT_UNREACHABLE: transient('the Git server does not answer', { see: 'gitops.md' }),
  KS_GIT_TIMEOUT: transient('the Git server did not answer in time', { see: 'gitops.md' }),
  KS_GIT_SERVER_BUSY: transient('the Git server is busy (429, 503): retried after its Retry-After', { see: 'gitops.md' }),
  KS_GIT_HTTP_ERROR: transient('the Git server answered with an HTTP error or a page that is not Git', { see: 'gitops.md' }),
  KS_GIT_SERVER_UNSUPPORTED: stalled('the Git server does not speak protocol v2 over smart HTTP', { see: 'gitops.md' }),
  KS_GIT_FETCH_FAILED: transient('fetching from the Git server failed', { see: 'gitops.md' }),
  KS_GIT_FETCH_TOO_LARGE: refused('what the Git server sent is over the fetch limit', { see: 'gitops.md', exit: 1 }),
  KS_GIT_PACK_TOO_LARGE: refused('a pack is over its size or object limit', { see: 'gitops.md', exit: 1 }),
  KS_GIT_PACK_CORRUPT: refused("a pack's checksum does not match its content", { see: 'gitops.md', exit: 1 }),
  KS_GIT_THIN_PACK: refused('a pack is malformed, or refers to objects outside it', { see: 'gitops.md', exit: 1 }),
  KS_GIT_MISSING: stalled('the git command is not on PATH', { see: 'fleet-reports.md' }),
  KS_NOT_A_GIT_REPOSITORY: invalid('the path is not a Git repository', { see: 'gitops.md', exit: 1 }),
  KS_FLEET_FETCH_FAILED: transient("listing a fleet's rollout refs failed", { see: 'fleet-reports.md' }),

  // Commit statuses and reports (docs/fleet-reports.md).
  KS_STATUS_UNREACHABLE: transient('the status server does not answer', { see: 'fleet-reports.md' }),
  KS_STATUS_SERVER_ERROR: transient('the status server answered with a server error, or something that is not its answer', { see: 'fleet-reports.md' }),
  KS_STATUS_RATE_LIMITED: transient('the status server rate-limits the device: retried when it says', { see: 'fleet-reports.md' }),
  KS_STATUS_CONFLICT: transient('the notes ref moved under the agent (another agent with this device name?): retried', { see: 'fleet-reports.md' }),
  KS_STATUS_GIT_FAILED: transient('a Git step of writing a report failed', { see: 'fleet-reports.md' }),
  KS_STATUS_NOTES_TOO_LARGE: transient('the notes are over their size limit: older entries are pruned and it is tried again', { see: 'fleet-reports.md' }),
  KS_STATUS_AUTH: stalled('the status server refused the token (or it lacks the permission)', { see: 'fleet-reports.md' }),
  KS_STATUS_REJECTED: stalled('the status server refused the report', { see: 'fleet-reports.md' }),
  KS_STATUS_INVALID: stalled('a report or update that cannot be sent as it is', { see: 'fleet-reports.md' }),
  KS_STATUS_UNEXPECTED: stalled('delivering a report failed in a way without a code of its own', { see: 'fleet-reports.md' }),

  // Agent updates (SPEC §17): fleet.toml's [agent], and a package refused on the device.
  KS_AGENT_PACKAGE_DIGEST: refused("the agent package's bytes do not match [agent]'s digest (also a fleet.toml diagnostic)", { see: 'fleets.md', exit: 1 }),
  KS_AGENT_NO_PACKAGE: refused('[agent] has no package for this architecture', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_PACKAGE_INVALID: refused('the agent package is not a Debian package of keystone for this architecture', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_DOWNGRADE: refused('[agent] asks for an older agent than runs', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_UNSIGNED: refused('[agent] is followed only from a signed revision', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_PACKAGE_VERSION: refused("the package's Debian Version is not [agent]'s version", { see: 'fleets.md', exit: 1 }),
  KS_AGENT_UPDATE_FAILED: stalled('the new agent did not adopt what ran before the switch: the old one is back', { see: 'fleets.md' }),

  // keystonectl talking to the agent (SPEC §9–10).
  KS_AGENT_UNREACHABLE: transient('no agent answers at the URL', { see: 'api.md' }),
  KS_AGENT_BAD_RESPONSE: stalled('what answered is not a Keystone agent (a line that is not JSON)', { see: 'api.md' }),
  KS_AGENT_BAD_ANSWER: stalled('the agent answered with something that is not what was asked for', { see: 'api.md' }),
  KS_APPLY_FILE_UNREADABLE: stalled('keystonectl apply cannot read a file of the revision', { see: 'gitops.md' }),
  KS_APPLY_TOO_LARGE: stalled("keystonectl apply: the revision's files are over the payload limit", { see: 'gitops.md' }),
  KS_INVALID_BASE: invalid('apply-dry --base: the base revision is invalid', { see: 'apply-dry.md' }),

  // The HTTP API (SPEC §10, docs/api.md): `{"error":{"code","message"}}` with the status.
  KS_BAD_REQUEST: api('invalid', 400, 'the request is malformed (another 4xx status when the server says so)'),
  KS_BAD_PATH: api('invalid', 400, 'the path has dot segments, backslashes, encoded slashes or NULs'),
  KS_BAD_QUERY: api('invalid', 400, 'an unknown, repeated or invalid query parameter'),
  KS_BAD_BODY: api('invalid', 400, 'the body is not what the route takes'),
  KS_BAD_JSON: api('invalid', 400, 'the body is not JSON'),
  KS_BODY_TOO_LARGE: api('invalid', 413, 'the body is larger than the API accepts'),
  KS_UNSUPPORTED_MEDIA_TYPE: api('invalid', 415, 'the body is not application/json'),
  KS_TOKEN_MISSING: api('refused', 401, 'no bearer token'),
  KS_TOKEN_INVALID: api('refused', 401, 'the bearer token is not the one in <state-dir>/api-token'),
  KS_SESSION_MISSING: api('refused', 401, 'no dashboard session: sign in at /'),
  KS_SESSION_INVALID: api('refused', 401, 'the dashboard session is not one the agent gave'),
  KS_SESSION_EXPIRED: api('refused', 401, 'the dashboard session expired'),
  KS_CSRF_MISSING: api('refused', 401, "a session request without the dashboard's CSRF header"),
  KS_CSRF_INVALID: api('refused', 401, "the dashboard's CSRF header does not match the session"),
  KS_FOREIGN_HOST: api('refused', 403, 'the Host header is not one of this machine\'s names'),
  KS_FOREIGN_ORIGIN: api('refused', 403, 'a request from a web page of another site'),
  KS_WEBHOOK_SIGNATURE: api('refused', 401, 'the webhook delivery has no valid X-Hub-Signature-256'),
  KS_WEBHOOK_DISABLED: api('waiting', 503, 'webhooks are off (no webhook secret configured)'),
  KS_NOT_FOUND: api('invalid', 404, 'no such route, action or file'),
  KS_COMPONENT_NOT_FOUND: api('invalid', 404, 'no such component on this device'),
  KS_NO_REVISION: api('waiting', 404, 'no revision has been applied on this device yet'),
  KS_FOLLOWING_GIT: api('refused', 409, 'the agent follows Git: a manual apply needs --force'),
  KS_WAIT_TIMEOUT: api('waiting', 504, 'what was asked for did not finish within the timeout; it goes on in the agent'),
  KS_SYNC_UNAVAILABLE: api('waiting', 503, 'the agent cannot look for a revision now (not following Git, or stopping)'),
  KS_SYNC_FAILED: api('transient', 502, 'looking at the source failed; the device keeps what it runs'),
  KS_SHUTTING_DOWN: api('waiting', 503, 'the agent is shutting down'),
  KS_NOT_IMPLEMENTED: api('stalled', 501, 'this agent cannot do what was asked (an older agent)'),
  KS_TOO_MANY_STREAMS: api('transient', 503, 'too many event or log streams are open'),
  KS_DASHBOARD_UNBUILT: api('stalled', 503, "the dashboard's files are not built (npm run build)"),
  KS_INTERNAL: api('stalled', 500, 'an internal error (see the agent log)'),
} as const satisfies Record<`KS_${string}`, CatalogueEntry>;

/** Every code Keystone emits. A literal typed as ErrorCode that is not in the catalogue fails tsc. */
export type ErrorCode = keyof typeof CATALOGUE;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(CATALOGUE, code);
}

/** The catalogue's entry of a code; undefined for a code it does not list (another program's, Node's). */
export function catalogued(code: unknown): CatalogueEntry | undefined {
  return isErrorCode(code) ? CATALOGUE[code] : undefined;
}

/** The anchor of a code in docs/errors.md: other pages link to `errors.md#ks_toml_syntax`. */
export function errorAnchor(code: ErrorCode): string {
  return code.toLowerCase();
}
