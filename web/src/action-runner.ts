// Restart / Stop / Start: a dry run first (what the action would touch, shown for confirmation), then the action
// itself, waited for until its components are healthy. One at a time: the agent runs operator actions in turn anyway,
// and one status line can then say plainly how the last one ended.
import { createContext } from 'preact';
import { useCallback, useRef, useState } from 'preact/hooks';
import { api, componentPath, messageOf, ApiError } from './api-client.js';
import type { ActionPlanView as ActionPlan } from '../../src/api/views.js';
import type { ActionName } from './api-types.js';

export const ACTION_LABELS: Record<ActionName, string> = { restart: 'Restart', stop: 'Stop', start: 'Start' };
const DOING: Record<ActionName, string> = { restart: 'restarting', stop: 'stopping', start: 'starting' };
const TIMEOUT = '120s';

export interface PendingAction {
  action: ActionName;
  name: string;
  plan: ActionPlan;
  /** Every other component of the device: what the action leaves alone. */
  untouched: string[];
}

export interface ActionStatus {
  text: string;
  error: boolean;
  /** The components' states when a wait ended without success (the API's `components`). */
  details?: Array<{ name: string; state: string; reason?: string | null }>;
}

export interface ActionRunner {
  busy: boolean;
  request(action: ActionName, name: string): void;
}

export const ActionContext = createContext<ActionRunner>({ busy: false, request: () => undefined });

interface RestartResult {
  pid?: number | null;
  dependents?: Record<string, unknown>;
}
interface StopResult {
  stoppedDependents?: string[];
}
interface StartResult {
  pid?: number | null;
  started?: string[];
}

const also = (verb: string, names: string[]) => (names.length ? `; also ${verb}: ${names.join(', ')}` : '');

function successText(action: ActionName, name: string, result: unknown): string {
  if (action === 'restart') {
    const r = (result ?? {}) as RestartResult;
    return `${name} restarted and healthy${r.pid ? ` (pid ${r.pid})` : ''}${also('restarted', Object.keys(r.dependents ?? {}))}`;
  }
  if (action === 'stop') {
    const r = (result ?? {}) as StopResult;
    return `${name} stopped${also('stopped', r.stoppedDependents ?? [])}. It stays stopped until started again or changed by a revision.`;
  }
  const r = (result ?? {}) as StartResult;
  const started = r.started ?? [];
  if (started.length === 0) return `${name} was already running and healthy`;
  const others = started.filter((n) => n !== name && !n.startsWith(`${name}/`));
  return `${name} started and healthy${r.pid ? ` (pid ${r.pid})` : ''}${also('started', others)}`;
}

/** `units` are the device's components (group members, not groups): the dialog lists those an action leaves alone. */
export function useActionRunner(units: string[], afterAction: () => void) {
  const [pending, setPending] = useState<PendingAction | null>(null);
  const [status, setStatus] = useState<ActionStatus | null>(null);
  const [busy, setBusy] = useState(false);
  const busyRef = useRef(false);
  const pendingRef = useRef<PendingAction | null>(null);
  const unitsRef = useRef(units);
  unitsRef.current = units;
  const afterRef = useRef(afterAction);
  afterRef.current = afterAction;

  const setBusyBoth = (b: boolean) => {
    busyRef.current = b;
    setBusy(b);
  };
  const setPendingBoth = (p: PendingAction | null) => {
    pendingRef.current = p;
    setPending(p);
  };

  const request = useCallback(async (action: ActionName, name: string) => {
    if (busyRef.current) return;
    setBusyBoth(true);
    try {
      const plan = await api<ActionPlan>(`${componentPath(name)}:${action}?dry=true`, { method: 'POST' });
      const touched = [...(plan.stopOrder ?? []), ...(plan.startOrder ?? [])];
      const untouched = unitsRef.current.filter((u) => !touched.some((t) => u === t || u.startsWith(`${t}/`)));
      setPendingBoth({ action, name, plan, untouched });
    } catch (e) {
      setStatus({ text: `${ACTION_LABELS[action]} ${name}: ${messageOf(e)}`, error: true });
      setBusyBoth(false);
    }
  }, []);

  const cancel = useCallback(() => {
    if (!pendingRef.current) return;
    setPendingBoth(null);
    setBusyBoth(false);
  }, []);

  const confirm = useCallback(async () => {
    const p = pendingRef.current;
    if (!p) return;
    setPendingBoth(null);
    setStatus({ text: `${DOING[p.action]} ${p.name}…`, error: false });
    const query = p.action === 'stop' ? `timeout=${TIMEOUT}` : `wait=health&timeout=${TIMEOUT}`;
    try {
      const result = await api<unknown>(`${componentPath(p.name)}:${p.action}?${query}`, { method: 'POST' });
      setStatus({ text: successText(p.action, p.name, result), error: false });
    } catch (e) {
      const components =
        e instanceof ApiError && Array.isArray(e.body.components)
          ? (e.body.components as ActionStatus['details'])
          : undefined;
      setStatus({ text: messageOf(e), error: true, ...(components && { details: components }) });
    } finally {
      setBusyBoth(false);
      afterRef.current();
    }
  }, []);

  const runner: ActionRunner = { busy, request: (a, n) => void request(a, n) };
  return { runner, pending, status, confirm: () => void confirm(), cancel, dismiss: () => setStatus(null) };
}
