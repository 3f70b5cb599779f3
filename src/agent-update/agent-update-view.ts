// What GET /v1/revision's `agent.update` says: a leaf that imports nothing (the dashboard's type-check reads it).

/** What GET /v1/revision's `agent.update` says (keystonectl status, the dashboard). */
export interface AgentUpdateView {
  /**
   * `trial`: this agent is a new version on probation until it reports success for `commit`; `failed`: `version` was
   * put back (`reason`), and commits naming its package report failure; `unsupported`: the fleet names another version
   * and this agent cannot update itself (not run from the keystone package under systemd: `reason`).
   */
  state: 'trial' | 'failed' | 'unsupported';
  version: string;
  commit?: string;
  reason?: string;
  /** ISO. */
  since?: string;
  /**
   * On `trial`: another version the newest revision taken up names (`nextCommit`), which waits until this one has
   * proven itself or was put back; then that revision is taken up again and its version checked like any other.
   */
  next?: string;
  nextCommit?: string;
}
