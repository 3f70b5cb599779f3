// The error catalogue's second part: codes of what runs and talks — runtimes, the state directory, Git, reports,
// agent updates, keystonectl and the HTTP API (error-catalogue.ts puts the parts together).
import { api, invalid, refused, stalled, transient, waiting, type CatalogueEntry } from './error-entry.js';

export const RUNNING_CODES = {
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
  KS_RUNTIME_UNAVAILABLE: stalled(
    'a component of a kind this device has no runtime for (containers without an engine)',
    { see: 'containers.md' },
  ),
  KS_CONTAINER_ENGINE_UNAVAILABLE: transient('no container engine answers at any endpoint tried', {
    see: 'containers.md',
  }),
  KS_CONTAINER_NOT_OWNED: refused('a container with our name that the agent did not make', {
    see: 'containers.md',
    exit: 1,
  }),
  KS_IMAGE_MISSING: stalled('an image is not on the device and may not be pulled', { see: 'containers.md' }),
  KS_IMAGE_PULL_FAILED: transient('pulling an image failed', { see: 'containers.md' }),
  KS_MOUNT_SOURCE_MISSING: stalled("a bind mount's host path is not there", { see: 'containers.md' }),
  KS_MOUNT_SOURCE_INVALID: invalid("a bind mount's host path is not absolute, or not a directory or file", {
    see: 'containers.md',
    exit: 1,
  }),
  KS_LOG_UNREADABLE: api(
    'stalled',
    500,
    "a component's log cannot be read (permission, a link where a log should be)",
    { see: 'agent.md' },
  ),
  KS_LOG_NO_SPACE: transient('the file system is full: a log was truncated without keeping a copy', {
    see: 'agent.md',
  }),

  // The state directory and its SQLite store (docs/agent.md).
  KS_STATE_DIR_UNSAFE: refused('the state directory could be written by another user', { see: 'security.md' }),
  KS_STATE_DIR_LOCKED: waiting('another agent holds the state directory', { see: 'agent.md' }),
  KS_STATE_OPEN_FAILED: stalled("the state directory's lock or database cannot be opened", { see: 'agent.md' }),
  KS_STATE_CORRUPT: stalled('the state database is not a usable SQLite database: move it aside', { see: 'agent.md' }),
  KS_STATE_INVALID: stalled(
    'the state store was used in a way it refuses (a write where only reads are allowed, a bad record)',
    { see: 'agent.md' },
  ),
  KS_STATE_NOT_FOUND: stalled('the state store has no such component', { see: 'agent.md' }),
  KS_STATE_SCHEMA_TOO_NEW: stalled('the state database was written by a newer agent', { see: 'agent.md' }),
  KS_STATE_BUSY: waiting('another process holds the state database', { see: 'agent.md' }),
  KS_STATE_DISK_FULL: stalled('the state database cannot write: the disk is full', { see: 'agent.md' }),

  // Git (docs/gitops.md). An operation failed: exit code 1.
  KS_GIT_REF_NOT_FOUND: stalled('the repository has no such branch or ref', { see: 'gitops.md' }),
  KS_GIT_READ_FAILED: stalled('reading the Git repository failed', { see: 'gitops.md' }),
  KS_GIT_FAILED: transient('a Git operation failed for a reason without a code of its own', { see: 'gitops.md' }),
  KS_GIT_BAD_URL: invalid('the repository URL is not one the agent fetches from', { see: 'gitops.md', exit: 1 }),
  KS_GIT_CREDENTIALS_IN_URL: refused('the repository URL carries credentials: give --git-token-file instead', {
    see: 'gitops.md',
    exit: 1,
  }),
  KS_GIT_AUTH_FAILED: refused('the Git server refused the credentials', { see: 'gitops.md', exit: 1 }),
  KS_GIT_REPO_NOT_FOUND: stalled('the Git server has no such repository', { see: 'gitops.md' }),
  KS_GIT_UNREACHABLE: transient('the Git server does not answer', { see: 'gitops.md' }),
  KS_GIT_TIMEOUT: transient('the Git server did not answer in time', { see: 'gitops.md' }),
  KS_GIT_SERVER_BUSY: transient('the Git server is busy (429, 503): retried after its Retry-After', {
    see: 'gitops.md',
  }),
  KS_GIT_HTTP_ERROR: transient('the Git server answered with an HTTP error or a page that is not Git', {
    see: 'gitops.md',
  }),
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
  KS_STATUS_SERVER_ERROR: transient(
    'the status server answered with a server error, or something that is not its answer',
    { see: 'fleet-reports.md' },
  ),
  KS_STATUS_RATE_LIMITED: transient('the status server rate-limits the device: retried when it says', {
    see: 'fleet-reports.md',
  }),
  KS_STATUS_CONFLICT: transient('the notes ref moved under the agent (another agent with this device name?): retried', {
    see: 'fleet-reports.md',
  }),
  KS_STATUS_GIT_FAILED: transient('a Git step of writing a report failed', { see: 'fleet-reports.md' }),
  KS_STATUS_NOTES_TOO_LARGE: transient(
    'the notes are over their size limit: older entries are pruned and it is tried again',
    { see: 'fleet-reports.md' },
  ),
  KS_STATUS_AUTH: stalled('the status server refused the token (or it lacks the permission)', {
    see: 'fleet-reports.md',
  }),
  KS_STATUS_REJECTED: stalled('the status server refused the report', { see: 'fleet-reports.md' }),
  KS_STATUS_INVALID: stalled('a report or update that cannot be sent as it is', { see: 'fleet-reports.md' }),
  KS_STATUS_UNEXPECTED: stalled('delivering a report failed in a way without a code of its own', {
    see: 'fleet-reports.md',
  }),

  // Agent updates (SPEC §17): fleet.toml's [agent], and a package refused on the device.
  KS_AGENT_PACKAGE_DIGEST: refused(
    "the agent package's bytes do not match [agent]'s digest (also a fleet.toml diagnostic)",
    { see: 'fleets.md', exit: 1 },
  ),
  KS_AGENT_NO_PACKAGE: refused('[agent] has no package for this architecture', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_PACKAGE_INVALID: refused('the agent package is not a Debian package of keystone for this architecture', {
    see: 'fleets.md',
    exit: 1,
  }),
  KS_AGENT_DOWNGRADE: refused('[agent] asks for an older agent than runs', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_UNSIGNED: refused('[agent] is followed only from a signed revision', { see: 'fleets.md', exit: 1 }),
  KS_AGENT_PACKAGE_VERSION: refused("the package's Debian Version is not [agent]'s version", {
    see: 'fleets.md',
    exit: 1,
  }),
  KS_AGENT_UPDATE_FAILED: stalled('the new agent did not adopt what ran before the switch: the old one is back', {
    see: 'fleets.md',
  }),

  // keystonectl talking to the agent (SPEC §9–10).
  KS_AGENT_UNREACHABLE: transient('no agent answers at the URL', { see: 'api.md' }),
  KS_AGENT_BAD_RESPONSE: stalled('what answered is not a Keystone agent (a line that is not JSON)', { see: 'api.md' }),
  KS_AGENT_BAD_ANSWER: stalled('the agent answered with something that is not what was asked for', { see: 'api.md' }),
  KS_APPLY_FILE_UNREADABLE: stalled('keystonectl apply cannot read a file of the revision', { see: 'gitops.md' }),
  KS_APPLY_TOO_LARGE: stalled("keystonectl apply: the revision's files are over the payload limit", {
    see: 'gitops.md',
  }),
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
  KS_FOREIGN_HOST: api('refused', 403, "the Host header is not one of this machine's names"),
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
