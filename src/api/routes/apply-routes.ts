// POST /v1/apply (`keystonectl apply PLAN`): a revision sent by an operator, applied through the agent's own loop
// (verified with the device's keyring, whatever the sender checked), and its progress streamed back as NDJSON lines
// until the device converged or the apply ended otherwise. POST /v1/resume ends a suspension of the Git sync.
import { PassThrough } from 'node:stream';
import type { ApiRouter } from '../api-router.js';
import * as v from 'valibot';
import { check, maxLength, minLength, record, safeParse, strictObject } from '../../core/valid.js';
import type { AgentEventMap } from '../../agent/agent.js';
import { escapesRepository } from '../../core/recipe.js';
import { MemoryReader } from '../../source/memory-reader.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { instanceOf } from '../component-view.js';
import { strictQuery } from '../query-params.js';

/** Recipes, plans, the signature and relative artifacts: generous, but bounded (base64 adds a third). */
export const APPLY_BODY_LIMIT = 48 * 1024 * 1024;
const MAX_FILES = 20_000;

const repoPath = v.pipe(
  v.string(),
  minLength(1),
  maxLength(1024),
  check<string>(
    (p) => !p.startsWith('/') && !p.includes('\\') && !p.includes('\0') && !escapesRepository(p),
    'must be a relative path inside the repository',
  ),
);

export const applyBody = strictObject({
  /** The plan, as a path inside the sent files. */
  plan: repoPath,
  /** Repository path → base64 of its exact bytes (signatures are checked on raw bytes). */
  files: v.pipe(
    record(repoPath, v.pipe(v.string(), v.base64())),
    check<Record<string, string>>((f) => Object.keys(f).length <= MAX_FILES, `at most ${MAX_FILES} files`),
  ),
  /** Apply even though the agent follows Git; suspends the Git sync until POST /v1/resume. */
  force: v.optional(v.boolean(), false),
  /** Apply now, inside or outside the device's maintenance window (SPEC §19); update locks still hold unless force. */
  now: v.optional(v.boolean(), false),
});

/** One line of the stream. */
export type ApplyProgress =
  | { event: 'accepted'; revision: string; planFile: string; suspendedSync: boolean }
  | { event: 'reconcile'; revision: string; stopOrder: string[]; startOrder: string[]; noTouch: string[] }
  | { event: 'state'; component: string; state: string; reason?: string }
  | { event: 'pull'; component: string; image: string; status: string; currentBytes: number; totalBytes: number }
  | {
      event: 'done';
      revision: string;
      outcome: 'success' | 'failure' | 'rejected' | 'superseded';
      summary: string;
      /** Success, and every component of the device is running (healthy). */
      converged: boolean;
      components: Array<{
        name: string;
        state: string;
        pid: number | null;
        containerId?: string;
        reason: string | null;
      }>;
    };

export function registerApplyRoutes(server: ApiRouter, ctx: ApiContext): void {
  const { agent } = ctx;

  server.post('/v1/apply', { limit: APPLY_BODY_LIMIT }, async (request, reply) => {
    const q = strictQuery(request.query, ['wait']);
    const wait = q.wait ?? 'converged';
    if (wait !== 'converged' && wait !== 'none')
      throw new ApiError(400, 'KS_BAD_QUERY', `wait must be converged or none, not ${JSON.stringify(wait)}`);
    const parsed = safeParse(applyBody, request.body);
    if (!parsed.success) {
      const issue = parsed.issues[0]!;
      throw new ApiError(400, 'KS_BAD_BODY', `${issue.path.join('.') || 'body'}: ${issue.message}`);
    }
    const body = parsed.data;
    const files = new Map(
      Object.entries(body.files).map(([p, b64]) => [p, new Uint8Array(Buffer.from(b64, 'base64'))]),
    );
    if (!files.has(body.plan))
      throw new ApiError(400, 'KS_BAD_BODY', `the plan ${body.plan} is not among the files sent`);
    const reader = new MemoryReader(files, `manual apply of ${body.plan}`);
    const revision = reader.revisionId();

    // Subscribed before the revision is handed over, so that nothing it does is missed.
    const out = new PassThrough();
    const line = (p: ApplyProgress) => out.write(JSON.stringify(p) + '\n');
    let applying = false;
    const listeners: { [K in keyof AgentEventMap]?: (...a: AgentEventMap[K]) => void } = {
      applying: (e) => {
        if (e.revision !== revision) return;
        applying = true;
        line({
          event: 'reconcile',
          revision,
          stopOrder: e.reconcile.stopOrder,
          startOrder: e.reconcile.startOrder,
          noTouch: e.reconcile.noTouch,
        });
      },
      // Only while this revision applies: the states of an apply queued before it belong to that one.
      state: (e) =>
        void (
          applying &&
          line({
            event: 'state',
            component: e.component,
            state: e.state,
            ...(e.reason !== undefined && { reason: e.reason }),
          })
        ),
      pull: (e) => void (applying && line({ event: 'pull', ...e })),
      revision: (e) => void (e.revision === revision && finish(e.outcome, e.summary)),
      superseded: (e) =>
        void (
          e.revision === revision &&
          finish('superseded', `replaced by the newer revision ${e.by} before it was applied`)
        ),
    };
    const unsubscribe = () => {
      for (const [k, fn] of Object.entries(listeners)) agent.events.off(k as keyof AgentEventMap, fn as never);
      ctx.waits.closingSignal.removeEventListener('abort', onClosing);
    };
    const finish = (outcome: Extract<ApplyProgress, { event: 'done' }>['outcome'], summary: string) => {
      unsubscribe();
      const records = agent.store.components();
      const components = records.map((r) => {
        const { pid, containerId } = instanceOf(agent, r, r.name);
        return {
          name: r.name,
          state: r.state,
          pid,
          ...(containerId !== null && { containerId }),
          reason: r.reason ?? null,
        };
      });
      const converged = outcome === 'success' && records.every((r) => r.state === 'running');
      line({ event: 'done', revision, outcome, summary, converged, components });
      out.end();
    };
    const onClosing = () => {
      unsubscribe();
      out.end();
    };

    if (wait === 'converged') {
      for (const [k, fn] of Object.entries(listeners)) agent.events.on(k as keyof AgentEventMap, fn as never);
      ctx.waits.closingSignal.addEventListener('abort', onClosing, { once: true });
      // The caller hanging up stops the stream, never the apply.
      reply.raw.once('close', unsubscribe);
    }
    let accepted;
    try {
      accepted = agent.applyManual(
        { id: revision, origin: 'manual', source: `manual apply (${files.size} files)`, reader, planFile: body.plan },
        { force: body.force, now: body.now },
      );
    } catch (e) {
      unsubscribe();
      const err = e as Error & { code?: string };
      if (err.code === 'KS_FOLLOWING_GIT')
        throw new ApiError(409, 'KS_FOLLOWING_GIT', err.message, { sync: agent.syncState() });
      throw e;
    }
    ctx.log?.info(
      { revision, plan: body.plan, files: files.size, force: body.force, now: body.now },
      'manual apply accepted',
    );
    if (wait === 'none') return reply.code(202).send(accepted);
    line({ event: 'accepted', ...accepted });
    return reply.code(200).type('application/x-ndjson').send(out);
  });

  server.post('/v1/resume', async (request) => {
    strictQuery(request.query, []);
    const r = agent.resume();
    return { ...r, sync: agent.syncState() };
  });
}
