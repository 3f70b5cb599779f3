// How the device policy looks to an operator, as a type alone (no imports): the dashboard (web/src) reads it in
// GET /v1/revision through src/api/views.ts, which must stay free of node: types.

/** What the policy looks like to an operator: `GET /v1/revision`, `keystonectl status`. Stable JSON keys. */
export interface DevicePolicyView {
  allowPrivileged: boolean;
  allowHostNamespaces: boolean;
  allowMounts: string[];
  allowCapabilities: string[];
  allowDevices: string[];
  allowRoot: boolean;
  /** The capabilities granted without any flag, per kind. */
  safeCapabilities: { process: string[]; container: string[] };
}
