// What the overview and the component pages show, fetched once and then again whenever the event stream says it
// changed. Refetches of one resource are coalesced: never two at once, never more than ~4 a second.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, messageOf } from './api-client.js';
import type {
  AgentView as AgentInfo,
  ComponentState,
  ComponentView,
  GraphView as Graph,
  GroupView,
  HistoryPageView as HistoryPage,
  RejectedView as Rejected,
  RevisionView as Revision,
} from '../../src/api/views.js';
import { isGroup, type ListItem } from './api-types.js';
import { followEventStream } from './event-stream.js';

export interface Loaded<T> {
  value?: T;
  /** The last refresh failed; `value` is still the last good answer. */
  error?: ApiError | undefined;
  loaded: boolean;
}

export interface PullProgress {
  image: string;
  status: string;
  currentBytes: number | null;
  totalBytes: number | null;
}

export interface DashboardData {
  components: Loaded<ListItem[]>;
  graph: Loaded<Graph>;
  revision: Loaded<Revision>;
  /** From the revision's answer, also its 404 before anything was applied. */
  agent?: AgentInfo | undefined;
  rejected?: Rejected | null | undefined;
  history: Loaded<HistoryPage>;
  pulls: Record<string, PullProgress>;
  live: boolean;
  refresh(what: Resource): void;
}

export type Resource = 'components' | 'graph' | 'revision' | 'history';

const MIN_INTERVAL_MS = 250;
export const HISTORY_LIMIT = 20;

const PATHS: Record<Resource, string> = {
  components: '/v1/components',
  graph: '/v1/graph',
  revision: '/v1/revision',
  history: `/v1/history?limit=${HISTORY_LIMIT}`,
};

/** Runs `load` on request, at most once per MIN_INTERVAL_MS and never overlapping; requests meanwhile fold into one. */
function coalesced(load: () => Promise<void>) {
  let running = false;
  let again = false;
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const run = async () => {
    timer = undefined;
    running = true;
    last = Date.now();
    try {
      await load();
    } finally {
      running = false;
      if (again && !stopped) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    if (timer) return;
    timer = setTimeout(() => void run(), Math.max(0, last + MIN_INTERVAL_MS - Date.now()));
  };
  return {
    request: schedule,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

const NOT_LOADED = { loaded: false };

/** What a state, started or restart event said about one component, shown until a list read after it arrives. */
interface Patch {
  /** performance.now() when it arrived, to compare with when a list read was asked for. */
  at: number;
  /** Date.now() then: the row's new "since". */
  wall: number;
  state?: ComponentState;
  reason?: string | null;
  pid?: number | null;
  restarts?: number;
}

const LIVE_STATES = new Set(['starting', 'running', 'unhealthy', 'stopping']);

function patched<T extends ComponentView | GroupView>(c: T, patch: Patch | undefined): T {
  if (!patch) return c;
  const next = { ...c };
  if (patch.state !== undefined) {
    next.state = patch.state;
    next.health = patch.state === 'running' ? 'healthy' : patch.state === 'unhealthy' ? 'unhealthy' : 'unknown';
    if (!isGroup(next)) {
      next.since = new Date(patch.wall).toISOString();
      if (!LIVE_STATES.has(patch.state)) next.pid = null;
    }
  }
  if (patch.reason !== undefined && !isGroup(next)) next.reason = patch.reason;
  if (patch.pid !== undefined && !isGroup(next)) next.pid = patch.pid;
  if (patch.restarts !== undefined) next.restarts = patch.restarts;
  return next;
}

/** The list as last read, with what events said since laid over it. */
function overlaid(items: ListItem[] | undefined, patches: ReadonlyMap<string, Patch>): ListItem[] | undefined {
  if (!items || patches.size === 0) return items;
  return items.map((c) =>
    isGroup(c)
      ? { ...patched(c, patches.get(c.name)), members: c.members.map((m) => patched(m, patches.get(m.name))) }
      : patched(c, patches.get(c.name)),
  );
}

export function useDashboardData(): DashboardData {
  const [components, setComponents] = useState<Loaded<ListItem[]>>(NOT_LOADED);
  const [graph, setGraph] = useState<Loaded<Graph>>(NOT_LOADED);
  const [revision, setRevision] = useState<Loaded<Revision>>(NOT_LOADED);
  const [history, setHistory] = useState<Loaded<HistoryPage>>(NOT_LOADED);
  const [about, setAbout] = useState<{ agent?: AgentInfo; rejected?: Rejected | null }>({});
  const [pulls, setPulls] = useState<Record<string, PullProgress>>({});
  const [live, setLive] = useState(false);
  // A state can last less than a list read takes to be asked for (a 100 ms backoff): the event's word shows at once.
  const [patches, setPatches] = useState<ReadonlyMap<string, Patch>>(new Map());

  const refreshers = useMemo(() => {
    function loader<T>(
      resource: Resource,
      set: (f: (old: Loaded<T>) => Loaded<T>) => void,
      seen?: (value: T | undefined, error?: ApiError, began?: number) => void,
    ) {
      return coalesced(async () => {
        const began = performance.now();
        try {
          const value = await api<T>(PATHS[resource]);
          set(() => ({ value, loaded: true }));
          seen?.(value, undefined, began);
        } catch (e) {
          const error = e instanceof ApiError ? e : new ApiError(0, 'KS_PAGE', messageOf(e));
          // Nothing applied yet is an answer, not a failure: the views say so in words.
          if (error.code === 'KS_NO_REVISION') set(() => ({ loaded: true, error }));
          else set((old) => ({ ...old, loaded: true, error }));
          seen?.(undefined, error, began);
        }
      });
    }
    return {
      components: loader<ListItem[]>('components', setComponents, (value, _error, began = 0) => {
        // A read asked for after an event already shows what it said (and more); later events stay on top.
        if (value) setPatches((old) => (old.size === 0 ? old : new Map([...old].filter(([, p]) => p.at >= began))));
      }),
      graph: loader<Graph>('graph', setGraph),
      revision: loader<Revision>('revision', setRevision, (value, error) => {
        const body = value ?? (error?.body as { agent?: AgentInfo; rejected?: Rejected | null } | undefined);
        if (body?.agent) setAbout({ agent: body.agent, rejected: body.rejected ?? null });
      }),
      history: loader<HistoryPage>('history', setHistory),
    };
  }, []);

  useEffect(() => {
    const all = () => Object.values(refreshers).forEach((r) => r.request());
    const patch = (name: string, p: Omit<Patch, 'at' | 'wall'>) =>
      setPatches((old) => {
        const next = new Map(old);
        next.set(name, { ...old.get(name), ...p, at: performance.now(), wall: Date.now() });
        return next;
      });
    // The views are read once the stream is open (nothing that happens after the read is missed, and nothing is read
    // twice); a stream that cannot open (the agent's cap of streams reached) must not leave the page empty.
    const fallback = setTimeout(all, 1_500);
    // The device's health (in the revision's `agent`) is a reading, not an event: read again every minute.
    const healthEvery = setInterval(() => refreshers.revision.request(), 60_000);
    const stop = followEventStream('/v1/events', {
      // Whatever happened before the stream was connected was missed: read everything (again, after a reconnect).
      onOpen: () => {
        clearTimeout(fallback);
        all();
      },
      onLive: setLive,
      onEvent(type, data) {
        const d = (data ?? {}) as EventData;
        switch (type) {
          case 'state':
          case 'started':
          case 'restart':
            refreshers.components.request();
            if (!d.component) break;
            if (type === 'state' && d.state) patch(d.component, { state: d.state, reason: d.reason ?? null });
            if (type === 'started' && typeof d.instance?.pid === 'number') patch(d.component, { pid: d.instance.pid });
            if (type === 'restart' && typeof d.restarts === 'number') patch(d.component, { restarts: d.restarts });
            if (type === 'started' || (d.state && d.state !== 'installing')) {
              const name = d.component;
              setPulls((p) => {
                if (!(name in p)) return p;
                const { [name]: _done, ...rest } = p;
                return rest;
              });
            }
            break;
          case 'revision':
          case 'resumed':
          case 'recovered':
            all();
            break;
          case 'applying':
            refreshers.history.request();
            break;
          case 'held':
          case 'waiting':
          case 'superseded':
            refreshers.revision.request();
            refreshers.history.request();
            break;
          case 'pull':
            if (d.component)
              setPulls((p) => ({
                ...p,
                [d.component!]: {
                  image: d.image ?? '',
                  status: d.status ?? '',
                  currentBytes: d.currentBytes ?? null,
                  totalBytes: d.totalBytes ?? null,
                },
              }));
            break;
        }
      },
    });
    return () => {
      clearTimeout(fallback);
      clearInterval(healthEvery);
      stop();
      Object.values(refreshers).forEach((r) => r.stop());
    };
  }, [refreshers]);

  const shown = useMemo(() => ({ ...components, value: overlaid(components.value, patches) }), [components, patches]);
  return {
    components: shown,
    graph,
    revision,
    agent: about.agent,
    rejected: about.rejected,
    history,
    pulls,
    live,
    refresh: (what) => refreshers[what].request(),
  };
}

interface EventData {
  component?: string;
  state?: ComponentState;
  reason?: string;
  restarts?: number;
  instance?: { kind?: string; pid?: number };
  image?: string;
  status?: string;
  currentBytes?: number;
  totalBytes?: number;
}
