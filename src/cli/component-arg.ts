// The component a command acts on (restart, stop, start, logs): its name from the command line, checked, and the path
// of its API route. Apart from agent-client.ts so that a command that names no component (status) does not load it.
import { isComponentName } from '../core/component-name.js';
import { UsageError } from './io.js';

/** A component name from the command line: the plan's rule, checked before it goes into a URL or a path. */
export function componentArg(positionals: string[], command: string): string {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one component NAME`);
  const name = positionals[0]!;
  // `app/web`: a member of composite `app` (or a replica, `workers/2`).
  const [first, ...members] = name.split('/');
  if (!isComponentName(first ?? '')) throw new UsageError(`"${first}" is not a valid component name`);
  if (members.some((m) => !/^[a-z0-9][a-z0-9_-]{0,62}$/i.test(m)))
    throw new UsageError(`"${name}" is not a valid member name: COMPONENT/MEMBER, each letters, digits, "_" and "-"`);
  return name;
}

/** The path of a component route: `/v1/components/{name}` plus an optional `:action`. */
export function componentPath(name: string, action?: 'restart' | 'stop' | 'start'): string {
  return `/v1/components/${name.split('/').map(encodeURIComponent).join('/')}${action ? `:${action}` : ''}`;
}
