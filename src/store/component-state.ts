// A component's recorded state and its dependencies, as words: a leaf that imports only types from leaves, so that the
// API's views (and the dashboard's type-check, which has no node: types) can name them without SQLite.
import type { DependencyType } from '../core/unit-kinds.js';

export const COMPONENT_STATES = [
  'installing',
  'starting',
  'running',
  'unhealthy',
  'backoff',
  'crash-looping',
  'failed',
  'stopping',
  'stopped',
] as const;
export type ComponentState = (typeof COMPONENT_STATES)[number];

export interface ComponentDependency {
  component: string;
  type: DependencyType;
}
