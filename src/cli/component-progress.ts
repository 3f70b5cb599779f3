// The state of each component as an action's error body carries it, and its rendering for the terminal: what
// withAgentErrors (agent-client.ts) prints under an API error. Apart because it reads a body's shape, not the wire.

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One component as an action's error reports it (the 504 of a wait that ran out, a 502 of a failed restart). */
export interface ComponentProgress {
  name: string;
  state: string;
  pid?: number | string;
  reason?: string;
}

/**
 * The state of each component an error body carries: `components` beside `error` (or inside it), as a list of
 * `{name, state, pid, reason}` or a map of name → state.
 */
export function progressOf(body: unknown): ComponentProgress[] {
  const root = isObject(body) ? body : {};
  const err = isObject(root.error) ? root.error : {};
  const found = root.components ?? err.components ?? root.states ?? err.states;
  const one = (name: string, v: unknown): ComponentProgress => {
    if (typeof v === 'string') return { name, state: v };
    const o = isObject(v) ? v : {};
    const id =
      typeof o.pid === 'number' ? o.pid : typeof o.containerId === 'string' ? o.containerId.slice(0, 12) : undefined;
    return {
      name,
      state: typeof o.state === 'string' ? o.state : '?',
      ...(id !== undefined && { pid: id }),
      ...(typeof o.reason === 'string' && { reason: o.reason }),
    };
  };
  if (Array.isArray(found)) return found.filter(isObject).map((o) => one(String(o.name ?? '?'), o));
  if (isObject(found)) return Object.entries(found).map(([n, v]) => one(n, v));
  return [];
}

/** `  api  unhealthy  pid 41088  (probe …: 503)`, one line per component. */
export function renderProgress(rows: ComponentProgress[]): string {
  if (rows.length === 0) return '';
  const nameW = Math.max(...rows.map((r) => r.name.length));
  const stateW = Math.max(...rows.map((r) => r.state.length));
  const id = (r: ComponentProgress) => (r.pid === undefined ? '' : typeof r.pid === 'number' ? `pid ${r.pid}` : r.pid);
  const idW = Math.max(...rows.map((r) => id(r).length));
  const line = (r: ComponentProgress) => {
    const cells = [
      r.name.padEnd(nameW),
      r.state.padEnd(stateW),
      ...(idW > 0 ? [id(r).padEnd(idW)] : []),
      r.reason ? `(${r.reason})` : '',
    ];
    return `  ${cells.join('  ')}`.trimEnd();
  };
  return rows.map(line).join('\n') + '\n';
}
