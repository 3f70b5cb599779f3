// The error catalogue's first part: codes of what comes in — revisions, command lines and configuration, signatures,
// identities, secrets, the device policy, artifacts (error-catalogue.ts puts the parts together).
import { api, invalid, refused, stalled, transient, waiting, type CatalogueEntry } from './error-entry.js';

export const INPUT_CODES = {
  // Revisions: recipes, plans, fleet.toml (SPEC §4–8, docs/formats.md). Reported as diagnostics of KS_INVALID_REVISION.
  KS_INVALID_REVISION: invalid(
    'the revision cannot be used: every diagnostic is listed, each with its file, TOML path, line and code',
    { see: 'formats.md' },
  ),
  KS_TOML_SYNTAX: invalid('a TOML file does not parse (or is not UTF-8)', { see: 'formats.md' }),
  KS_UNKNOWN_KEY: invalid('a table has a key the format does not know', { see: 'formats.md' }),
  KS_MISSING_FIELD: invalid('a required key is missing', { see: 'formats.md' }),
  KS_INVALID_TYPE: invalid('a value has the wrong TOML type', { see: 'formats.md' }),
  KS_INVALID_VALUE: invalid('a value is outside what the key accepts', { see: 'formats.md' }),
  KS_BAD_DURATION: invalid('a duration is not a Go-style duration above zero and at most a week', {
    see: 'formats.md',
  }),
  KS_BAD_SEMVER: invalid('a version is not exactly a semantic version', { see: 'formats.md' }),
  KS_BAD_SEMVER_RANGE: invalid('a version range does not parse', { see: 'formats.md' }),
  KS_BAD_NAME: api(
    'invalid',
    400,
    'a component, recipe or device name is not one (letters, digits, ".", "_" and "-", at most 63 characters)',
    { see: 'formats.md' },
  ),
  KS_BAD_HEALTH_CHECK: invalid('a health check is not http(s)://, tcp://host:port or cmd:', { see: 'formats.md' }),
  KS_BAD_CAPABILITY: invalid('a capability is not a Linux capability name', { see: 'formats.md' }),
  KS_BAD_LABEL: invalid('a label key or value is not one', { see: 'fleets.md' }),
  KS_ARTIFACT_UNSIGNED: refused('an artifact has no valid sha256 digest', { see: 'formats.md' }),
  KS_ARTIFACT_BAD_URI: refused('an artifact names no fetchable scheme, or a path outside the repository', {
    see: 'formats.md',
  }),
  KS_PROCESS_FIELD_ON_CONTAINER: invalid('a process-only table (security, exec) in a container recipe', {
    see: 'formats.md',
  }),
  KS_CONTAINER_FIELD_ON_PROCESS: invalid('a container table in a process recipe', { see: 'formats.md' }),
  KS_DUPLICATE_COMPONENT: invalid('two plan entries (or replicas) claim the same component name', {
    see: 'formats.md',
  }),
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
  KS_TEMPLATE_SHELL_CONTEXT: invalid(
    'a placeholder stands where one quoted shell word would not be exactly its value',
    { see: 'composites.md' },
  ),
  KS_CONFIG_UNKNOWN: invalid('a placeholder names a configuration key the recipe does not declare', {
    see: 'composites.md',
  }),
  KS_CONFIG_NOT_SCALAR: invalid('a configuration value is not a string, number or boolean', { see: 'composites.md' }),
  KS_CONFIG_OVERRIDE_UNKNOWN: invalid('a plan overrides a configuration key the recipe does not declare', {
    see: 'composites.md',
  }),
  KS_BIND_UNKNOWN: invalid('a bind names an export no component has', { see: 'composites.md' }),
  KS_EXPORT_COLLISION: invalid('two components export the same name', { see: 'composites.md' }),
  KS_FLEET_MISSING: invalid('the repository has no fleet.toml where one is needed', { see: 'fleets.md' }),
  KS_FLEET_DUPLICATE_TARGET: invalid('fleet.toml names a target twice', { see: 'fleets.md' }),
  KS_FLEET_TARGET_EMPTY: invalid('a fleet target selects no device by any rule', { see: 'fleets.md' }),
  KS_FLEET_PLAN_INVALID: invalid("a fleet target's plan does not load", { see: 'fleets.md' }),
  KS_FLEET_PLAN_PATH: invalid("a fleet target's plan path is not a plans/*.toml of the repository", {
    see: 'fleets.md',
  }),
  KS_FLEET_UNKNOWN_COMPONENT: invalid('fleet.toml names a component no plan has', { see: 'fleets.md' }),
  KS_FLEET_NO_TARGET: invalid('no fleet.toml target selects this device', { see: 'fleets.md' }),
  KS_ROLLOUT_DUPLICATE_WAVE: invalid('[rollout] names a wave twice', { see: 'rollouts.md' }),
  KS_ROLLOUT_WAVE_RULE: invalid('a rollout wave has no rule, or more than one', { see: 'rollouts.md' }),
  KS_ROLLOUT_PERCENTS: invalid("the waves' percentages do not rise to 100", { see: 'rollouts.md' }),
  KS_SECRET_PLACEMENT: invalid("a {{secret.NAME}} outside an environment variable's value", { see: 'secrets.md' }),
  KS_SECRET_FILE: invalid(
    'a [[lifecycle.run.secrets]] file is not a plain file name (or an absolute path in a container)',
    { see: 'secrets.md' },
  ),
  KS_UPDATE_LOCK: waiting('a component holds its update lock: the update waits until it lets go', { see: 'agent.md' }),

  // Command lines and the agent's configuration file (SPEC §9, docs/agent.md).
  KS_USAGE: invalid(
    'a command line (or a setting) is not one the program takes; thrown by an operation it is exit code 1',
    { see: 'spec.md' },
  ),
  KS_INVALID_CONFIG: invalid('the configuration file is invalid: every problem with its line', { see: 'agent.md' }),
  KS_CONFIG_SOURCE: invalid('the configuration gives no source, or both --repo and --dir', { see: 'agent.md' }),
  KS_CONFIG_CONFLICT: invalid('two settings of the configuration cannot both hold', { see: 'agent.md' }),
  KS_CONFIG_SECRET_INLINE: invalid(
    'a secret (a token, a webhook secret) written in the configuration file instead of a file of its own',
    { see: 'agent.md' },
  ),
  KS_FILE_UNREADABLE: invalid('a file the configuration names cannot be read', { see: 'agent.md' }),
  KS_ENGINE_SOCKET_INVALID: invalid('--engine-socket is not a socket path or a tcp:// address', {
    see: 'containers.md',
  }),
  KS_ENGINE_SOCKET_MISSING: invalid('--engine-socket names a socket that is not there', { see: 'containers.md' }),
  KS_DOCKER_HOST_UNSUPPORTED: invalid('DOCKER_HOST names a scheme the agent does not speak (ssh://, npipe://)', {
    see: 'containers.md',
  }),
  KS_CONFIG_UNSAFE: refused('another user could change the configuration file', { see: 'security.md' }),
  KS_TRUSTED_KEY_UNSAFE: refused('another user could change a trusted key file', { see: 'security.md' }),
  KS_SECRET_FILE_UNSAFE: refused('another user could read or change a secret file the agent reads', {
    see: 'security.md',
  }),
  KS_INIT_WRITE_FAILED: stalled('keystone init cannot write the configuration file', { see: 'install.md' }),
  KS_API_LISTEN_FAILED: stalled("the API cannot listen at the address asked for (taken, not this machine's)", {
    see: 'agent.md',
  }),
  KS_API_TOKEN_INVALID: stalled('<state-dir>/api-token is unsafe or not a token', { see: 'api.md' }),

  // Signatures and trust (SPEC §5, docs/signing.md). Refused as a whole: exit code 2.
  KS_UNSIGNED: refused('the revision has no SHA256SUMS signature', { see: 'signing.md' }),
  KS_SIGNATURE_MALFORMED: refused('a signature file does not parse', { see: 'signing.md' }),
  KS_SIGNATURE_TOO_LARGE: refused('SHA256SUMS.minisig is over its size limit', { see: 'signing.md' }),
  KS_SIGNATURE_INVALID: refused('a signature does not match the signed file', { see: 'signing.md' }),
  KS_SIGNATURE_NONCANONICAL: refused('a signature is non-canonical (malleated)', { see: 'signing.md' }),
  KS_TRUSTED_COMMENT_INVALID: refused('a trusted comment was altered', { see: 'signing.md' }),
  KS_SIGNATURE_NO_TIMESTAMP: refused('a trusted comment has no timestamp, so replay cannot be ruled out', {
    see: 'signing.md',
  }),
  KS_SIGNATURE_WRONG_REF: refused('the signature was made for another branch', { see: 'signing.md' }),
  KS_SIGNATURE_NO_REF: refused('the signature names no branch, and one is required', { see: 'signing.md' }),
  KS_SIGNATURE_TOO_OLD: refused('the signature is older than the newest one this device applied (a rollback)', {
    see: 'signing.md',
  }),
  KS_SIGNATURE_FROM_FUTURE: refused("the signature's time lies ahead of the device's clock", { see: 'signing.md' }),
  KS_SIGNATURE_REPLAYED: refused('an older signed revision offered again', { see: 'signing.md' }),
  KS_UNTRUSTED_KEY: refused('signed by a key that is not trusted here', { see: 'signing.md' }),
  KS_THRESHOLD_NOT_MET: refused('fewer trusted keys signed than --threshold asks', { see: 'signing.md' }),
  KS_WEAK_KEY: refused('a key is not a strong minisign Ed25519 key', { see: 'signing.md' }),
  KS_KEY_MALFORMED: refused('a key file does not parse', { see: 'signing.md' }),
  KS_KEY_PASSWORD: refused('the secret key is password-protected and no (or the wrong) password was given', {
    see: 'signing.md',
  }),
  KS_SUMS_MALFORMED: refused('SHA256SUMS has a line that is not "<sha256>  <path>"', { see: 'signing.md' }),
  KS_SUMS_TOO_LARGE: refused('SHA256SUMS is over its size limit', { see: 'signing.md' }),
  KS_SUMS_CHANGED: stalled('sign --append: SHA256SUMS changed since the others signed', { see: 'signing.md' }),
  KS_DIGEST_MISMATCH: refused("a file's digest is not the one SHA256SUMS lists", { see: 'signing.md' }),
  KS_FILE_NOT_SIGNED: refused('a file of the revision is not listed in SHA256SUMS', { see: 'signing.md' }),
  KS_SIGNED_FILE_MISSING: refused('a file SHA256SUMS lists is not in the revision', { see: 'signing.md' }),
  KS_HISTORY_REWRITE: refused('the followed branch moved to a commit that does not descend from the applied one', {
    see: 'gitops.md',
  }),
  KS_HISTORY_UNVERIFIED: refused(
    'the history between the applied commit and the new one is longer than the agent checks',
    { see: 'gitops.md' },
  ),

  // The device's identity, certificates and revocations (SPEC §13, docs/fleet-reports.md).
  KS_IDENTITY_MISSING: refused('a key file of the device is gone while the state directory says it had one', {
    see: 'fleet-reports.md',
  }),
  KS_IDENTITY_UNSAFE: refused('a key file of the device, or its directory, is open to another user', {
    see: 'fleet-reports.md',
  }),
  KS_IDENTITY_MALFORMED: refused('a key file of the device does not parse', { see: 'fleet-reports.md' }),
  KS_CERT_MALFORMED: refused('a certificate is not the format keystonectl enroll writes', { see: 'fleet-reports.md' }),
  KS_CERT_UNKNOWN_KEY: refused('a certificate signed by a key that is not a trusted enrolment key', {
    see: 'fleet-reports.md',
  }),
  KS_CERT_BAD_SIGNATURE: refused("a certificate's signature does not verify", { see: 'fleet-reports.md' }),
  KS_CERT_WRONG_DEVICE: refused('a certificate for another device', { see: 'fleet-reports.md' }),
  KS_CERT_EXPIRED: refused('a certificate past its expiry, or issued in the future', { see: 'fleet-reports.md' }),
  KS_CERT_REVOKED: refused('a certificate devices/revoked.toml names', { see: 'fleet-reports.md' }),
  KS_CERT_OTHER_KEY: refused(
    "this device's certificate names other keys than it holds (reinstalled, not enrolled again)",
    { see: 'fleet-reports.md' },
  ),
  KS_REVOCATIONS_INVALID: invalid('devices/revoked.toml does not parse or breaks its schema', {
    see: 'fleet-reports.md',
  }),
  KS_NO_DEVICES_DIR: waiting('the commit has no devices/ directory: no report verifies, the commit stays held', {
    see: 'fleet-reports.md',
  }),
  KS_NO_ENROLLMENT_KEY: waiting(
    'the fleet counts only enrolled devices and this one has no --enrollment-key: the commit stays held',
    { see: 'fleet-reports.md' },
  ),

  // Secrets (SPEC §16, docs/secrets.md).
  KS_SECRET_MISSING: refused('a secret the plan reads has no secrets/NAME.age', { see: 'secrets.md' }),
  KS_SECRET_NOT_RECIPIENT: refused("a secret is not encrypted to this device's target", { see: 'secrets.md' }),
  KS_SECRET_CORRUPT: refused('a secret or target key file does not decrypt or parse', { see: 'secrets.md' }),
  KS_SECRET_NO_TARGET: refused('the plan reads secrets and this device is in no fleet target', { see: 'secrets.md' }),
  KS_SECRET_OPERATOR: refused(
    "keystonectl secret refuses: the operator's identity, a target, or the repository's files are not as it needs",
    { see: 'secrets.md' },
  ),
  KS_SECRET_UNAVAILABLE: stalled('a component reads secrets and the runtime was given none', { see: 'secrets.md' }),
  KS_SECRET_NOT_TEXT: stalled('a secret read as an environment variable is not UTF-8 text without NUL', {
    see: 'secrets.md',
  }),
  KS_SECRET_PATH_TAKEN: stalled("a secret file's path is taken by something the agent did not make", {
    see: 'secrets.md',
  }),
  KS_SECRET_FILE_FAILED: stalled('writing a secret file failed', { see: 'secrets.md' }),
  KS_SECRET_SHARED_USER: waiting('a warning: a component that reads secrets runs as a user other components share', {
    see: 'secrets.md',
    exit: 1,
  }),

  // Device policy (docs/security.md): what a revision may ask of this device. The agent refuses such a revision and
  // keeps running (a runtime raises the code again before it creates anything: exit code 1 should one end a program);
  // apply-dry reports them under KS_NOT_PERMITTED, exit code 2.
  KS_NOT_PERMITTED: refused(
    'apply-dry: the plan asks for what the device policy does not allow (each problem with its code)',
    { see: 'apply-dry.md' },
  ),
  KS_CONTAINER_NOT_PERMITTED: refused(
    'a container asks for what the device policy does not allow (privileged, host namespaces)',
    { see: 'security.md', exit: 1 },
  ),
  KS_MOUNT_NOT_PERMITTED: refused('a bind mount outside the paths the device policy allows', {
    see: 'security.md',
    exit: 1,
  }),
  KS_CAPABILITY_NOT_PERMITTED: refused('a capability the device policy does not grant', {
    see: 'security.md',
    exit: 1,
  }),
  KS_DEVICE_NOT_PERMITTED: refused('a host device the device policy does not allow', { see: 'security.md', exit: 1 }),
  KS_ROOT_NOT_PERMITTED: refused('a component runs as root and the device policy does not allow it', {
    see: 'security.md',
    exit: 1,
  }),

  // Artifacts (docs/formats.md): refused downloads and archives are exit code 2, a server that does not answer 1.
  KS_ARTIFACT_DIGEST_MISMATCH: refused("an artifact's bytes do not match its sha256", { see: 'formats.md' }),
  KS_ARTIFACT_TOO_LARGE: refused('an artifact is over its size limit', { see: 'formats.md' }),
  KS_ARTIFACT_FETCH_FAILED: transient('an artifact could not be downloaded', { see: 'formats.md' }),
  KS_ARTIFACT_NOT_FOUND: invalid('an artifact file of the repository is not there', { see: 'formats.md' }),
  KS_ARTIFACT_INSTALL_UNSAFE: refused('installing an artifact would replace what it must not (too deep, a link)', {
    see: 'formats.md',
  }),
  KS_UNPACK_UNSAFE_ENTRY: refused('an archive entry escapes, links out, or is a device', { see: 'formats.md' }),
  KS_UNPACK_TOO_LARGE: refused('an archive inflates past its limit', { see: 'formats.md' }),
  KS_UNPACK_TOO_DEEP: refused('an archive nests deeper than the limit', { see: 'formats.md' }),
  KS_UNPACK_FORMAT: refused('an archive is corrupt or of an unknown format', { see: 'formats.md' }),
  KS_DISK_SPACE: waiting("a revision's downloads do not fit on the disk: it waits, and the device keeps what it runs", {
    see: 'agent.md',
  }),
} as const satisfies Record<`KS_${string}`, CatalogueEntry>;
