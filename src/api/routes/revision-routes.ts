// GET /v1/revision and GET /v1/history: what the device applied, newest first, paged by id.
import type { ApiRouter } from '../api-router.js';
import { DEFAULT_DEVICE_POLICY, devicePolicyView } from '../../core/device-policy.js';
import type { HistoryEntry } from '../../store/state-store.js';
import { agentView } from '../agent-view.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { parseIntParam, strictQuery } from '../query-params.js';
import { newestRejection } from '../rejected-view.js';
import type {
  ApplyOutcomeView,
  DeviceHoldView,
  HistoryEntryView,
  HistoryPageView,
  RevisionView,
  RolloutHoldView,
  SyncView,
} from '../views.js';
import { isoTime } from '../../core/iso-time.js';

export const DEFAULT_HISTORY_LIMIT = 20;
export const MAX_HISTORY_LIMIT = 100;

const iso = (ms: number | undefined) => (ms === undefined ? null : isoTime(ms));

function historyView(h: HistoryEntry): HistoryEntryView {
  return {
    id: h.id,
    revision: h.revision,
    planFile: h.planFile,
    target: h.target ?? null,
    startedAt: iso(h.startedAt),
    finishedAt: iso(h.finishedAt),
    // Unfinished: still applying, or the agent died during it (it is finished as interrupted at the next start).
    outcome: h.outcome ?? 'applying',
    summary: h.summary ?? null,
    failed: h.failed,
    reconcile: h.reconcile ?? null,
  };
}

/**
 * How the applied revision's apply ended (SPEC §5): `success`, `failure` or `applying`, and — after a failure — the
 * recovery, if its components got healthy since. A recovery never turns the failure into a success.
 */
function outcomeView(entries: readonly HistoryEntry[]): ApplyOutcomeView | null {
  const mine = entries.filter((e) => e.outcome !== 'rejected');
  const apply = mine.find((e) => e.outcome !== 'recovered');
  if (!apply) return null;
  const recovery =
    apply.outcome === 'failure' ? mine.find((e) => e.outcome === 'recovered' && e.id > apply.id) : undefined;
  return {
    apply: apply.outcome ?? 'applying',
    summary: apply.summary ?? null,
    finishedAt: iso(apply.finishedAt),
    recovered: recovery ? { at: iso(recovery.finishedAt), summary: recovery.summary ?? null } : null,
  };
}

function waitingView(ctx: ApiContext): DeviceHoldView | null {
  const w = ctx.agent.waiting?.();
  if (!w) return null;
  return {
    revision: w.revision,
    reason: w.reason,
    since: iso(w.since),
    holders: w.holders.map((h) => ({ component: h.component, lock: h.lock, timeoutAt: iso(h.timeoutAt) })),
    // Held for the maintenance window: when it opens; null for update locks.
    opensAt: iso(w.opensAt),
  };
}

function syncView(ctx: ApiContext): SyncView {
  const s = ctx.agent.syncState();
  return {
    following: s.following,
    suspended: s.suspended
      ? { since: iso(s.suspended.since), revision: s.suspended.revision, reason: s.suspended.reason }
      : null,
    held: s.held ?? null,
  };
}

export function registerRevisionRoutes(server: ApiRouter, ctx: ApiContext): void {
  server.get('/v1/revision', async (request): Promise<RevisionView> => {
    strictQuery(request.query, []);
    const r = ctx.agent.store.appliedRevision();
    // Which agent answers, and the newest revision it refused while that is the last thing it looked at: also on a
    // device that has applied nothing yet (its first commit refused is when a new user needs to see why most).
    const about = { agent: agentView(ctx), rejected: newestRejection(ctx.agent.store) ?? null };
    if (!r) throw new ApiError(404, 'KS_NO_REVISION', 'no revision has been applied on this device yet', about);
    return {
      id: r.id,
      source: r.source,
      planFile: r.planFile,
      // The fleet.toml target the plan came from (SPEC §13); null for --plan or a manual apply.
      target: r.target ?? null,
      unsigned: r.unsigned,
      signedAt: r.signedAt === undefined ? null : isoTime(r.signedAt * 1000),
      // The keys whose signatures counted; null when unsigned (or applied by an agent that did not keep them).
      signers: r.signers ?? null,
      // This device's rollout wave for the commit (SPEC §14); null outside a staged rollout.
      wave: r.wave ?? null,
      appliedAt: iso(r.appliedAt),
      // How its apply ended, and a later recovery (SPEC §5); null when the history no longer has it.
      outcome: outcomeView(ctx.agent.store.historyOf(r.id, 50)),
      // What the device follows, and whether a forced manual apply holds the Git sync (until POST /v1/resume).
      sync: syncView(ctx),
      // Newer commits held at the rollout gate (SPEC §14), newest first, each with why: `held: waiting for wave …`.
      rollout: (ctx.agent.rolloutHolds?.() ?? []).map((h): RolloutHoldView => ({
        revision: h.revision,
        target: h.target ?? null,
        wave: h.wave,
        reason: h.reason,
        checkedAt: iso(h.checkedAt),
      })),
      // A newer revision waiting on this device for a component's update lock (SPEC §19), else null.
      waiting: waitingView(ctx),
      // Composites this revision could not update: rolled back, and held at their previous members until another revision.
      rolledBack: ctx.agent.store.groupRollbacks?.() ?? [],
      // What this device allows any recipe (SPEC §5 device policy): what a revision was checked against.
      policy: devicePolicyView(ctx.policy ?? DEFAULT_DEVICE_POLICY),
      // Said in words too: a dashboard that shows only messages must not present an unsigned device as fine.
      ...(r.unsigned && {
        warning: 'UNSIGNED: this revision was applied without a signature check (--allow-unsigned, development only)',
      }),
      // The agent's pid and version (a shared machine runs several agents: stop this one by its pid).
      agent: about.agent,
      // The newest revision refused, while nothing newer was applied: {revision, at, code, reason}, else null.
      rejected: about.rejected,
    };
  });

  // The policy alone, also before any revision is applied (apply-dry --agent checks a plan against it).
  server.get('/v1/policy', async (request) => {
    strictQuery(request.query, []);
    return devicePolicyView(ctx.policy ?? DEFAULT_DEVICE_POLICY);
  });

  server.get('/v1/history', async (request): Promise<HistoryPageView> => {
    const q = strictQuery(request.query, ['limit', 'before']);
    const limit = parseIntParam('limit', q.limit, DEFAULT_HISTORY_LIMIT, 1, MAX_HISTORY_LIMIT)!;
    const before = parseIntParam('before', q.before, undefined, 1, Number.MAX_SAFE_INTEGER);
    const entries = ctx.agent.store.history({ limit, ...(before !== undefined && { before }) });
    const last = entries.at(-1);
    // The cursor of the next (older) page; null on the last page.
    // What waits has no row yet (nothing of it was applied): said beside the rows, on the first page.
    return {
      entries: entries.map(historyView),
      nextBefore: entries.length === limit && last ? last.id : null,
      waiting: before === undefined ? waitingView(ctx) : null,
    };
  });
}
