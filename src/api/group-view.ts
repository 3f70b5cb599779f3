// A plan component made of several units (a composite, a recipe's services, replicas) as the API shows it: one entry
// whose state is derived from its members', with the members' own views nested under it.
import type { DesiredGroup } from '../core/desired-state.js';
import type { ComponentState } from '../store/state-store.js';
import type { ComponentView } from './component-view.js';
import type { GroupView } from './views.js';

export type { GroupView };

/** Worst first: a composite is as well as its least well member. */
const SEVERITY: readonly ComponentState[] = [
  'failed',
  'crash-looping',
  'backoff',
  'unhealthy',
  'stopping',
  'installing',
  'starting',
  'stopped',
  'running',
];

/** The composite's state: its worst member's; `stopped` when it has none (`replicas = 0`). */
export function derivedState(states: readonly ComponentState[]): ComponentState {
  if (states.length === 0) return 'stopped';
  return SEVERITY.find((s) => states.includes(s)) ?? 'running';
}

export function groupView(group: DesiredGroup, members: ComponentView[]): GroupView {
  const state = derivedState(members.map((m) => m.state));
  return {
    name: group.name,
    kind: group.kind,
    state,
    pid: null,
    containerId: null,
    version: group.version,
    health: state === 'running' ? 'healthy' : members.some((m) => m.health === 'unhealthy') ? 'unhealthy' : 'unknown',
    restarts: members.reduce((n, m) => n + m.restarts, 0),
    held: members.length > 0 && members.every((m) => m.held),
    members,
  };
}
