// The human form of `keystonectl status`: the applied revision on top, then one row per component. Pure: the
// API's JSON and the time in, text out. Tolerant of the shapes it reads (a field it does not find prints as "-").
import { describeDevicePolicy, type DevicePolicy } from '../../core/device-policy.js';
import { isCommitId } from '../../git/commit-id.js';
import { isoTime } from '../../core/iso-time.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;

/** The component list of `GET /v1/components`: a bare array or `{components: […]}`. */
export function componentList(body: unknown): unknown[] {
  if (Array.isArray(body)) return body;
  if (isObject(body) && Array.isArray(body.components)) return body.components;
  return [];
}

/** The revision of `GET /v1/revision`: the object itself or `{revision: {…}}`; undefined when none is applied. */
export function revisionOf(body: unknown): Json | undefined {
  if (!isObject(body)) return undefined;
  if (isObject(body.revision)) return body.revision;
  return str(body.id) !== undefined ? body : undefined;
}

/** A time as the API may give it (ms since the epoch, or an ISO string) in ms; undefined when absent. */
export function timeMs(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : t;
  }
  return undefined;
}

/** `12s ago`, `3m ago`, `5h ago`, `2d ago`; a time in the future (clock skew) counts as now. */
export function ago(thenMs: number, nowMs: number): string {
  const s = Math.max(0, Math.floor((nowMs - thenMs) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** `2024-05-01 10:00:03Z`: UTC, to the second, the same on every machine. */
export function utc(ms: number): string {
  return isoTime(ms)
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

/** The pid or (short) container id of a component, from `pid`, `container`/`containerId` or an `instance` ref. */
export function instanceOf(c: Json): string | undefined {
  const pid = str(c.pid);
  if (pid !== undefined) return pid;
  const container = str(c.containerId) ?? str(c.container) ?? str(c.containerID);
  if (container !== undefined) return container.slice(0, 12);
  if (isObject(c.instance)) return str(c.instance.pid) ?? str(c.instance.id)?.slice(0, 12);
  return undefined;
}

function healthOf(v: unknown): string | undefined {
  if (typeof v === 'boolean') return v ? 'healthy' : 'unhealthy';
  if (isObject(v)) {
    const s = str(v.status) ?? str(v.state);
    if (s !== undefined) return s;
    if (typeof v.ok === 'boolean') return v.ok ? 'healthy' : 'unhealthy';
    return undefined;
  }
  return str(v);
}

export interface StatusRow {
  name: string;
  state: string;
  version: string;
  instance: string;
  health: string;
  restarts: string;
  since: string;
  reason?: string;
}

export function statusRow(raw: unknown, nowMs: number): StatusRow {
  const c = isObject(raw) ? raw : {};
  const since = timeMs(c.since);
  const reason = str(c.reason);
  return {
    name: str(c.name) ?? '?',
    state: (str(c.state) ?? '?') + (c.held === true && c.state !== 'crash-looping' ? ' (held)' : ''),
    version: str(c.version) ?? '-',
    instance: instanceOf(c) ?? '-',
    health: healthOf(c.health) ?? '-',
    restarts: str(c.restarts) ?? '-',
    since: since === undefined ? '-' : ago(since, nowMs),
    ...(reason !== undefined && { reason }),
  };
}

/**
 * One row, or for a group (a composite, a recipe's services, replicas) its own row and its members' rows nested
 * under it, as `hab svc status` showed composites.
 */
function rowsOf(raw: unknown, nowMs: number): StatusRow[] {
  const row = statusRow(raw, nowMs);
  if (!isObject(raw) || !Array.isArray(raw.members)) return [row];
  const members = raw.members;
  const noun = raw.kind === 'replicas' ? 'replica' : 'member';
  const running = members.filter((m) => isObject(m) && m.state === 'running').length;
  row.instance = `${running}/${members.length} ${noun}${members.length === 1 ? '' : 's'} up`;
  return [
    row,
    ...members.map((m, i) => {
      const r = statusRow(m, nowMs);
      return { ...r, name: `${i === members.length - 1 ? '└─' : '├─'} ${r.name}` };
    }),
  ];
}

/** The line above the table: which revision runs, and `UNSIGNED` loudly when it is. */
export function revisionLine(rev: Json | undefined, nowMs: number): string {
  if (!rev) return 'revision: none applied yet';
  const parts = [`revision ${str(rev.id) ?? '?'}`];
  const plan = str(rev.planFile) ?? str(rev.plan);
  if (plan) parts.push(`plan ${plan}`);
  const target = str(rev.target);
  if (target) parts.push(`target ${target}`);
  const applied = timeMs(rev.appliedAt);
  if (applied !== undefined) parts.push(`applied ${ago(applied, nowMs)}`);
  // How the apply ended: a failure stays a failure after a restart; a later recovery is said beside it (SPEC §5).
  const outcome = isObject(rev.outcome) ? rev.outcome : undefined;
  if (outcome && str(outcome.apply) !== undefined) {
    const recovered = isObject(outcome.recovered) ? timeMs(outcome.recovered.at) : undefined;
    parts.push(`outcome ${str(outcome.apply)}${recovered !== undefined ? `, recovered ${ago(recovered, nowMs)}` : ''}`);
  }
  if (rev.unsigned === true) parts.push('*** UNSIGNED: signatures are not checked (development only) ***');
  else {
    // signedAt is Unix seconds in the store; an ISO string is accepted too.
    const signed = typeof rev.signedAt === 'number' ? rev.signedAt * 1000 : timeMs(rev.signedAt);
    if (signed !== undefined) parts.push(`signed ${utc(signed)}`);
  }
  const line = parts.join('  ');
  // A composite this revision could not update runs its previous members: say so, or the table alone would look fine.
  const rolledBack = Array.isArray(rev.rolledBack) ? rev.rolledBack.filter(isObject) : [];
  const heldBack = rolledBack.length
    ? `\n*** ${rolledBack.map((r) => str(r.group) ?? '?').join(', ')}: this revision could not update ${rolledBack.length === 1 ? 'it' : 'them'}; rolled back to the previous members until another revision ***`
    : '';
  // Newer commits waiting at the rollout gate (SPEC §14): what this device will run next, and why not yet.
  const holds = Array.isArray(rev.rollout) ? rev.rollout.filter(isObject) : [];
  const gate =
    holds
      .map(
        (h) =>
          `\ncommit ${(str(h.revision) ?? '?').slice(0, 12)} (wave ${str(h.wave) ?? '?'}): ${str(h.reason) ?? 'held'}`,
      )
      .join('') + waitingLine(rev.waiting, nowMs);
  // A suspended sync is the one thing an operator must not miss: the device no longer follows its commits.
  const sync = isObject(rev.sync) ? rev.sync : undefined;
  const suspended = sync && isObject(sync.suspended) ? sync.suspended : undefined;
  if (!suspended) return line + heldBack + gate;
  const since = timeMs(suspended.since);
  const held = str(sync?.held);
  return `${line}${heldBack}${gate}\n*** Git sync suspended by the manual apply ${str(suspended.revision) ?? '?'}${since !== undefined ? ` ${ago(since, nowMs)}` : ''}${held ? `; commit ${held.slice(0, 12)} is waiting` : ''}: run \`keystonectl resume\` ***`;
}

/** A revision waiting on this device for update locks (SPEC §19): `pending 3f2a1c0d9e8b: held: api holds its update lock (since 4m ago)`. */
export function waitingLine(w: unknown, nowMs: number): string {
  if (!isObject(w)) return '';
  const since = timeMs(w.since);
  const rev = str(w.revision) ?? '?';
  return `\npending ${/^[0-9a-f]{40,64}$/.test(rev) ? rev.slice(0, 12) : rev}: ${str(w.reason) ?? 'held'}${since !== undefined ? ` (since ${ago(since, nowMs)})` : ''}; what runs keeps running`;
}

const HEADERS: Record<keyof StatusRow, string> = {
  name: 'COMPONENT',
  state: 'STATE',
  version: 'VERSION',
  instance: 'PID/CONTAINER',
  health: 'HEALTH',
  restarts: 'RESTARTS',
  since: 'SINCE',
  reason: 'REASON',
};

/** `policy: safe defaults only` or `policy: allows host namespaces (--allow-host-namespaces); …`. */
export function policyLine(policy: DevicePolicy): string {
  const grants = describeDevicePolicy(policy);
  return grants.length ? `policy: allows ${grants.join('; ')}` : 'policy: safe defaults only (no --allow-* flag)';
}

/** `agent pid 23401  keystone 0.1.0  started 5m ago`: which agent answers (GET /v1/revision's `agent`). */
export function agentLine(agent: unknown, nowMs: number): string | undefined {
  if (!isObject(agent)) return undefined;
  const pid = str(agent.pid);
  if (pid === undefined) return undefined;
  const version = str(agent.version);
  const started = timeMs(agent.startedAt);
  return [
    `agent pid ${pid}`,
    ...(version ? [`keystone ${version}`] : []),
    ...(started !== undefined ? [`started ${ago(started, nowMs)}`] : []),
  ].join('  ');
}

/**
 * The agent update GET /v1/revision's `agent.update` tells of (SPEC §17), one line; undefined when there is none:
 *   `agent update: 0.2.0 on trial since 2026-12-05 07:30:00Z until it reports success for 3cae32fcfc87`
 *   `… until it reports success for 3cae32fcfc87; 0.3.0 (commit 5d1e0a9b2c3f) waits for it`
 *   `agent update: 0.3.0 failed and was put back (commit 3cae32fcfc87): the new agent exited 1 at start`
 *   `agent update: the fleet names 0.2.0; this agent cannot update itself (not run from the keystone package)`
 */
export function agentUpdateLine(agent: unknown): string | undefined {
  if (!isObject(agent) || !isObject(agent.update)) return undefined;
  const u = agent.update;
  const version = str(u.version) ?? '?';
  const commit = str(u.commit)?.slice(0, 12);
  const reason = str(u.reason);
  const since = timeMs(u.since);
  const next = str(u.next);
  const nextCommit = str(u.nextCommit)?.slice(0, 12);
  switch (u.state) {
    case 'trial':
      return `agent update: ${version} on trial${since !== undefined ? ` since ${utc(since)}` : ''} until it reports success${commit ? ` for ${commit}` : ''}${next ? `; ${next}${nextCommit ? ` (commit ${nextCommit})` : ''} waits for it` : ''}`;
    case 'failed':
      return `agent update: ${version} failed and was put back${commit ? ` (commit ${commit})` : ''}${reason ? `: ${reason}` : ''}`;
    case 'unsupported':
      return `agent update: the fleet names ${version}; this agent cannot update itself${reason ? ` (${reason})` : ''}`;
    default:
      // A state a newer agent added: said as it comes rather than hidden.
      return `agent update: ${str(u.state) ?? '?'} ${version}${commit ? ` (commit ${commit})` : ''}${reason ? `: ${reason}` : ''}`;
  }
}

/**
 * `newest commit 1a2b3c4d rejected: KS_SIGNATURE_REPLAYED: …` (GET /v1/revision's `rejected`): the newest revision the
 * agent refused, while nothing newer was applied; the table below is what still runs.
 */
export function rejectedLine(rejected: unknown): string | undefined {
  if (!isObject(rejected)) return undefined;
  const id = str(rejected.revision) ?? '?';
  const what = isCommitId(id) ? `commit ${id.slice(0, 8)}` : `revision ${id}`;
  const code = str(rejected.code);
  let reason = str(rejected.reason) ?? '';
  // The code once, in front: reasons carry it either as a prefix or as a trailing `[KS_…]`.
  if (code !== undefined && !reason.startsWith(`${code}:`))
    reason = `${code}: ${reason.endsWith(` [${code}]`) ? reason.slice(0, -` [${code}]`.length) : reason}`;
  return `newest ${what} rejected: ${reason}`.trimEnd();
}

/** What GET /v1/revision says besides the revision (also in its 404, before any revision is applied). */
export interface StatusExtras {
  agent?: unknown;
  rejected?: unknown;
}

/** The whole `status` output; the REASON column appears only when some component has a reason. */
export function renderStatus(
  components: unknown[],
  revision: Json | undefined,
  nowMs: number,
  policy?: DevicePolicy,
  extras: StatusExtras = {},
): string {
  const agent = agentLine(extras.agent, nowMs);
  const update = agentUpdateLine(extras.agent);
  const rejected = rejectedLine(extras.rejected);
  const lines = [
    ...(agent ? [agent] : []),
    ...(update ? [update] : []),
    revisionLine(revision, nowMs),
    ...(rejected ? [rejected] : []),
    ...(policy ? [policyLine(policy)] : []),
  ];
  if (components.length === 0) return [...lines, 'no components'].join('\n') + '\n';
  const rows = components.flatMap((c) => rowsOf(c, nowMs));
  const columns: Array<keyof StatusRow> = ['name', 'state', 'version', 'instance', 'health', 'restarts', 'since'];
  if (rows.some((r) => r.reason !== undefined)) columns.push('reason');
  const cell = (r: StatusRow, k: keyof StatusRow) => r[k] ?? '';
  const widths = columns.map((k) => Math.max(HEADERS[k].length, ...rows.map((r) => cell(r, k).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  lines.push(line(columns.map((k) => HEADERS[k])));
  for (const r of rows) lines.push(line(columns.map((k) => cell(r, k))));
  return lines.join('\n') + '\n';
}
