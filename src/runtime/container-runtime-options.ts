// The options of a ContainerRuntime: the owner label, the device policy, the engines' sockets, secrets and timings.
// Apart from container-runtime.ts so that the engines (container-engines.ts) and the exit watches
// (container-watches.ts) take their part of them without importing the runtime.
import type { DevicePolicy } from '../core/device-policy.js';
import type { PolicyHost } from '../core/policy-check.js';
import type { Logger } from '../log/logger.js';
import type { SecretValues } from '../secrets/secret-vault.js';
import type { UserDb } from '../state-dir/user-db.js';
import type { InstallArtifactsFn } from './artifact-installer.js';
import type { SocketPaths } from './container-engine.js';
import type { PullProgress } from './container-image.js';
import type { AgentIdentity } from './privileges.js';
import type { SecretsDir } from './secrets-root.js';

export interface ContainerRuntimeOptions {
  /** The agent's identity (as ProcessRuntime's ownerTag): the `io.keystone.owner` label of every container it creates. */
  ownerTag: string;
  /** What this device allows (SPEC §5 device policy); default: nothing beyond the safe defaults. */
  policy?: DevicePolicy;
  /** The host facts the policy is checked against; default: this machine's (hostPolicyFacts). */
  policyHost?: PolicyHost;
  /** Puts a component's artifacts into its work directory (as for processes); without it, artifacts are refused. */
  installArtifacts?: InstallArtifactsFn;
  /** Pull progress, failures of log copying, foreign containers left alone. */
  log?: Pick<Logger, 'info' | 'warn'>;
  /** Pull progress events, e.g. for a terminal's progress line. */
  onPullProgress?: (component: string, p: PullProgress) => void;
  now?: () => number;
  /** For the random part of container names. */
  random?: () => number;
  /** Where to look for engines instead of the defaults (tests). */
  socketPaths?: SocketPaths;
  /** DOCKER_HOST and XDG_RUNTIME_DIR come from here; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Who the agent is (default: this process), the user database and setpriv, for host-side `cmd:` checks. */
  agent?: AgentIdentity;
  userDb?: () => Promise<UserDb>;
  setprivPath?: string;
  /** Does a host path exist (mount sources)? Default existsSync. */
  exists?: (path: string) => boolean;
  /** How long an exit (or a stop) waits for the container's last output to reach the log files. Default 2000 ms. */
  logDrainMs?: number;
  /** How often an exit is polled when the engine's wait fails (an engine restart). Default 1000 ms. */
  exitPollMs?: number;
  /** Secret values by digest (SPEC §16): into the container's Env and read-only files, only where it is created. */
  secrets?: SecretValues;
  /** Where the files mounted into containers are written (secrets-root.ts; a plain path is taken as it is). */
  secretsRoot?: string | SecretsDir;
}
