// `{name}:action` of SPEC §10 (`com.acme-x.y:restart`). Parsed here rather than by the router: the route is the
// prefix `/v1/components/*`, and a name may hold `.`, `-` and `/` (`com.acme-x.y`, `app/web`).
import { componentName } from '../core/schema-rules.js';
import { safeParse } from '../core/valid.js';
import { ApiError } from './api-error.js';

export const COMPONENT_ACTIONS = ['restart', 'stop', 'start'] as const;
export type ComponentAction = (typeof COMPONENT_ACTIONS)[number];

export interface ComponentTarget {
  name: string;
  action?: ComponentAction;
}

/** The router's already-decoded path after `/v1/components/`. Names never contain `:`, so the last one splits. */
export function parseComponentTarget(segment: string): ComponentTarget {
  const colon = segment.lastIndexOf(':');
  const name = colon < 0 ? segment : segment.slice(0, colon);
  const action = colon < 0 ? undefined : segment.slice(colon + 1);
  // `app/web`, `workers/2`: a composite's member or a replica, under its plan component's name.
  const [first, ...rest] = name.split('/');
  if (!safeParse(componentName, first).success || rest.some((m) => !/^[a-z0-9][a-z0-9_-]{0,62}$/i.test(m)))
    throw new ApiError(
      400,
      'KS_BAD_NAME',
      `${JSON.stringify(name)} is not a component name (letters, digits, ".", "_" and "-", at most 63 characters; "/" before a member)`,
    );
  if (action === undefined) return { name };
  if (!(COMPONENT_ACTIONS as readonly string[]).includes(action))
    throw new ApiError(
      404,
      'KS_NOT_FOUND',
      `no action ${JSON.stringify(action)} on components (actions: ${COMPONENT_ACTIONS.map((a) => `:${a}`).join(', ')})`,
    );
  return { name, action: action as ComponentAction };
}
