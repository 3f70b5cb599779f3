// A revision: one desired state to take up, with where it came from. Made by the sources (a Git commit, a watched
// directory) and by the API (a manual apply); taken up by the agent (src/agent/take-revision.ts).
import type { RepoReader } from './repo-reader.js';

/** A Git commit followed from the repository, a watched directory's content, or an operator's manual apply. */
export type RevisionOrigin = 'commit' | 'directory' | 'manual';

export interface Revision {
  /** `dir:<12 hex>` for a directory; a commit id for Git; `manual:<12 hex>` for a manual apply. */
  id: string;
  /** Where it came from, said once by the source that made it, so nothing has to guess it from the id's shape. */
  origin: RevisionOrigin;
  /** Where it came from, for people and the state store. */
  source: string;
  /** The full Git ref it was read from (`refs/heads/main`); absent for a directory or a manual apply. */
  ref?: string;
  reader: RepoReader;
  /** The plan to apply, when the revision names its own (a manual apply); otherwise the agent's `--plan`. */
  planFile?: string;
  /**
   * Set only by the agent's own `--on-failure rollback`: a revision this device applied successfully before, applied
   * again; the replay floor does not refuse it. Never set from outside the agent.
   */
  rollback?: boolean;
  /** An operator's forced manual apply (`keystonectl apply --force`): update locks are not waited for (SPEC §19). */
  overrideLocks?: boolean;
  /** An operator's `keystonectl apply --now`: the maintenance window is not waited for (SPEC §19); locks are. */
  overrideWindow?: boolean;
}
