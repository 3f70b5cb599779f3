// Types the agent's options (agent-options.ts), its settings (run-settings.ts) and the spine (take-revision.ts) all
// name. A leaf on purpose: it imports nothing from agent/, so sharing these closes no import circle.
import type { Keyring } from '../trust/keyring.js';

export type TrustSetting =
  | { unsigned: true }
  /** `requireRef`: only signatures bound to a ref count (SPEC §6, `--require-ref`). */
  | { unsigned: false; keyring: Keyring; maxAgeSeconds?: number; maxClockSkewSeconds?: number; requireRef?: boolean };

/** A component this device cannot run as its recipe asks. */
export interface DeviceProblem {
  component: string;
  /** The recipe file. */
  file: string;
  /** TOML path, e.g. `lifecycle.run.container.mounts[0].source`. */
  path: string;
  code: string;
  message: string;
}
