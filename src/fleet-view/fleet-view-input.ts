// What the fleet view is built from (fleet-view.ts buildFleetView): each device's report lines as the repository holds
// them (read by fleet-reports-read.ts, checked by fleet-verify.ts) and the fleet file's targets. Apart from the view so
// that the readers of reports need only these shapes, not the grouping rules.
import type { ReportSignature } from '../identity/report-signature.js';
import type { Verification } from '../identity/report-verifier.js';

/** One report line of a device, on some commit. */
export interface DeviceReport {
  commit: string;
  state: string;
  /** ms since the epoch; NaN when the line's time does not parse. */
  at: number;
  /** `target`, `wave` when the line carries them. */
  fields: Readonly<Record<string, string>>;
  description: string;
  /** The failing component's last lines, when the report carries them. */
  log?: readonly string[];
  /** The device's signature, and what it covers (status-note.ts); absent on an unsigned line. */
  signature?: ReportSignature;
  signed?: readonly string[];
  /** Whether it is the device's own (identity/report-verifier.ts); absent: not checked. */
  verification?: Verification;
  /** Whether the view counts it: a verified report, or an unverified one where enrolment is not required. */
  counted?: boolean;
}

/** What the repository tells about one device. */
export interface DeviceReports {
  device: string;
  /** Its line on the commit viewed, if any. */
  onCommit?: DeviceReport;
  /** Its newest report on any commit (its notes ref's tip), if it ever reported. */
  newest?: DeviceReport;
  /**
   * The certificate it publishes beside its reports (note-commit.ts CERTIFICATE_ENTRY), if any: read when asked, only for
   * a device devices/ has none for (one tree read per device of the fleet otherwise).
   */
  publishedCertificate?: () => Promise<string | undefined>;
}

/** A target as the fleet file gives it; only what the view needs. */
export interface ViewTarget {
  name: string;
  plan: string;
  devices?: readonly string[];
  /** The agent version the file names for its devices (SPEC §17): the target's own `[agent]`, else the fleet's. */
  agentVersion?: string;
}

export type Ancestry = 'older' | 'newer' | 'unknown';

export interface FleetViewInput {
  commit: string;
  /** The commit's committer time, ms. */
  commitTime: number;
  /** The targets of the commit's fleet.toml in file order; undefined when the commit has none. */
  targets?: readonly ViewTarget[];
  reports: readonly DeviceReports[];
  now: number;
  silentAfterMs: number;
  /** How another commit relates to the one viewed (an ancestor is older); absent means unknown. */
  ancestry?: Readonly<Record<string, Ancestry>>;
  /**
   * The commit has a `[rollout]`: each device's wave as its rollout refs say (fleet-rollout-view.ts refWaves). Given,
   * every device gets `wave`; absent, none does (and the JSON keeps its shape without a rollout).
   */
  waves?: ReadonlyMap<string, string>;
  /** The `[rollout]`'s wave names in order: the order of `agentUpdate` per wave. */
  waveOrder?: readonly string[];
}
