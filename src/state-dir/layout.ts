// The state directory's layout (SPEC §5): the one place that names what the agent keeps under `--state-dir`. Each
// entry says who writes it and its mode; docs/agent.md's "State directory" table lists the same entries
// (test/state-dir/layout.test.ts checks both ways). Names only, and pure path functions: no I/O here.
import { join } from 'node:path';

/** `api-token`: the API's bearer token, 32 random bytes in hex; written once by api/api-token.ts, file 0600. */
export const API_TOKEN_FILE = 'api-token';
/** `agent.lock`: one agent per state directory, SQLite's lock held for the agent's life; agent/state-dir-lock.ts, file 0600. */
export const LOCK_FILE = 'agent.lock';
/** `agent.pid`: the lock holder's pid, only to name it; agent/state-dir-lock.ts, file 0644. */
export const PID_FILE = 'agent.pid';
/** `state.db` (and its `-wal`, `-shm`): the SQLite state store; store/state-database.ts, file 0600. */
export const STATE_DB_FILE = 'state.db';
/** `git/`: the cache of the followed repository (`git/<key>/gen-N`); git/git-remote-cache.ts, directory 0700, files 0600. */
export const GIT_CACHE_DIR = 'git';
/** `notes.git/`: the Git notes reporter's cache of the reports' repository; report/git-notes-reporter.ts, directory 0700, files 0600. */
export const NOTES_CACHE_DIR = 'notes.git';
/** `identity/`: the device's keys, which never leave it; identity/device-keys.ts, directory 0700. */
export const IDENTITY_DIR = 'identity';
/** `identity/report.key`: the Ed25519 key that signs the device's reports; identity/device-keys.ts, file 0600. */
export const REPORT_KEY_FILE = 'report.key';
/** `identity/report.pub`: its public half; identity/device-keys.ts, file 0644. */
export const REPORT_PUB_FILE = 'report.pub';
/** `identity/age.key`: the age identity secrets are encrypted to; identity/device-keys.ts, file 0600. */
export const AGE_KEY_FILE = 'age.key';
/** `device.json`: the marker that the device had an identity, and its public halves; beside identity/, not in it; identity/device-keys.ts, file 0644. */
export const DEVICE_FILE = 'device.json';
/** `secrets-root`: the record of where the processes' secret files go (a tmpfs directory); runtime/secrets-root.ts, file 0600. */
export const SECRETS_ROOT_RECORD = 'secrets-root';
/** `secrets-run/`: those secret files on disk, on a device without tmpfs; runtime/secrets-root.ts, directory 0711 (root agent) or 0700. */
export const SECRETS_ON_DISK = 'secrets-run';
/** `cache/`: downloaded artifacts by sha256 (`cache/sha256/<hex>`) and agent packages; artifacts/ and agent-update/, directory 0700. */
export const ARTIFACT_CACHE_DIR = 'cache';
/** `components/`: one directory per component (a group's units nested under the group's name); agent/agent.ts, directory 0711. */
export const COMPONENTS_DIR = 'components';
/** `components/<name>/work/`: the component's working directory, its run user's, kept across versions; runtime/work-dir.ts, directory 0750. */
export const WORK_DIR = 'work';
/** `components/<name>/logs/`: the component's stdout and stderr logs; runtime/log-files.ts, directory 0750. */
export const LOGS_DIR = 'logs';

/** Under the state directory, what holds repository content: the agent's user's alone (agent/state-dir.ts). */
export const REPOSITORY_CONTENT: readonly string[] = [GIT_CACHE_DIR, NOTES_CACHE_DIR];

export interface LayoutEntry {
  /** Relative to the state directory; a directory ends in `/`; `<name>` is a component's name. */
  path: string;
  /** Who writes it (a file under src/). */
  writer: string;
  /** Its mode, as `ls -l` would print the bits (`0600`). */
  mode: string;
}

/** Every entry above, for the docs (docs/agent.md's "State directory" table) and its test. */
export const STATE_DIR_LAYOUT: readonly LayoutEntry[] = [
  { path: API_TOKEN_FILE, writer: 'api/api-token.ts', mode: '0600' },
  { path: LOCK_FILE, writer: 'agent/state-dir-lock.ts', mode: '0600' },
  { path: PID_FILE, writer: 'agent/state-dir-lock.ts', mode: '0644' },
  { path: STATE_DB_FILE, writer: 'store/state-database.ts', mode: '0600' },
  { path: `${GIT_CACHE_DIR}/`, writer: 'git/git-remote-cache.ts', mode: '0700' },
  { path: `${NOTES_CACHE_DIR}/`, writer: 'report/git-notes-reporter.ts', mode: '0700' },
  { path: `${IDENTITY_DIR}/`, writer: 'identity/device-keys.ts', mode: '0700' },
  { path: `${IDENTITY_DIR}/${REPORT_KEY_FILE}`, writer: 'identity/device-keys.ts', mode: '0600' },
  { path: `${IDENTITY_DIR}/${REPORT_PUB_FILE}`, writer: 'identity/device-keys.ts', mode: '0644' },
  { path: `${IDENTITY_DIR}/${AGE_KEY_FILE}`, writer: 'identity/device-keys.ts', mode: '0600' },
  { path: DEVICE_FILE, writer: 'identity/device-keys.ts', mode: '0644' },
  { path: SECRETS_ROOT_RECORD, writer: 'runtime/secrets-root.ts', mode: '0600' },
  { path: `${SECRETS_ON_DISK}/`, writer: 'runtime/secrets-root.ts', mode: '0711 (root) or 0700' },
  { path: `${ARTIFACT_CACHE_DIR}/`, writer: 'artifacts/fetch-artifact.ts', mode: '0700' },
  { path: `${COMPONENTS_DIR}/`, writer: 'agent/agent.ts', mode: '0711' },
  { path: `${COMPONENTS_DIR}/<name>/${WORK_DIR}/`, writer: 'runtime/work-dir.ts', mode: '0750' },
  { path: `${COMPONENTS_DIR}/<name>/${LOGS_DIR}/`, writer: 'runtime/log-files.ts', mode: '0750' },
];

/** `<stateDir>/<name>`: a top-level entry's path. */
export const statePath = (stateDir: string, name: string): string => join(stateDir, name);

/** `<stateDir>/components/<name>`: a component's directory (`name` may be a group's unit, `app/web`). */
export const componentDir = (stateDir: string, name: string): string => join(stateDir, COMPONENTS_DIR, name);

/** Where a component lives: `<state>/components/<name>/{work,logs}`. */
export function componentPaths(stateDir: string, name: string): { workDir: string; logDir: string } {
  return {
    workDir: join(componentDir(stateDir, name), WORK_DIR),
    logDir: join(componentDir(stateDir, name), LOGS_DIR),
  };
}
