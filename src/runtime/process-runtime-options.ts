// The options of a ProcessRuntime: who the agent is, what it allows, the user database, secrets and timings. Apart
// from process-runtime.ts, which is long enough with the runtime itself.
import type { SecretValues } from '../secrets/secret-vault.js';
import type { UserDb } from '../state-dir/user-db.js';
import type { InstallArtifactsFn } from './artifact-installer.js';
import type { AgentIdentity } from './privileges.js';
import type { PollClock } from './process-group.js';
import type { SecretsDir } from './secrets-root.js';

export interface ProcessRuntimeOptions {
  /** Puts a component's artifacts into a directory (see artifactInstaller). */
  installArtifacts: InstallArtifactsFn;
  /** Default /usr/bin/setpriv. */
  setprivPath?: string;
  /** Who the agent is; default: the current process. */
  agent?: AgentIdentity;
  /** The device allows root process users (--allow-root); default false. */
  allowRoot?: boolean;
  /** The user database; default: /etc/passwd and /etc/group, read on every install and start. */
  userDb?: () => Promise<UserDb>;
  /** LANG of components; default the agent's LANG or C.UTF-8. */
  lang?: string;
  clock?: PollClock;
  /**
   * How often the instances adopted after an agent restart are checked for exit (one timer and one /proc read each
   * for all of them: they are not the agent's children, so no exit event tells). Default 1000 ms.
   */
  adoptPollMs?: number;
  /** How long to wait for the kernel after SIGKILL before KS_STOP_FAILED. Default 5000 ms. */
  killWaitMs?: number;
  /**
   * Marks every component process (KEYSTONE_OWNER in its environment) so that an agent that died
   * between a spawn and its record can find and remove what it owns, and nothing else.
   */
  ownerTag?: string;
  /** Secret values by digest (SPEC §16), put into a component's environment and files only where it starts. */
  secrets?: SecretValues;
  /** Where secret files are written (secrets-root.ts: tmpfs where there is one; a plain path is taken as it is). */
  secretsRoot?: string | SecretsDir;
}
