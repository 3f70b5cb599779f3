// GET /v1/logs/{name}?lines=200&stderr=false&follow=false: a component's output as `keystonectl logs` reads it, through
// the agent (a dashboard on a tunnel has no shell on the device). With follow=true, Server-Sent Events: one `line` per
// line, the last `lines` first, then each new one, across rotations.
import type { ApiRouter } from '../api-router.js';
import { join } from 'node:path';
import { OperationError } from '../../core/errors.js';
import { STDERR_LOG, STDOUT_LOG } from '../../runtime/log-files.js';
import { followLog, lastCompleteLines } from '../../runtime/log-follow.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { parseComponentTarget } from '../component-target.js';
import { openEventStream, StreamSlots } from '../event-stream.js';
import { parseBool, parseIntParam, strictQuery } from '../query-params.js';

export const MAX_LOG_LINES = 5_000;
/** A component page each in a few tabs. */
export const MAX_LOG_STREAMS = 16;
/** The log is polled by size (log-follow.ts); a person reading a tail notices nothing under half a second. */
const FOLLOW_POLL_MS = 500;

const unreadable = (e: unknown) =>
  e instanceof OperationError && e.code === 'KS_LOG_UNREADABLE' ? new ApiError(500, 'KS_LOG_UNREADABLE', e.message) : e;

export function registerLogRoutes(server: ApiRouter, ctx: ApiContext): void {
  const slots = new StreamSlots(MAX_LOG_STREAMS);
  server.get('/v1/logs/*', async (request, reply) => {
    const q = strictQuery(request.query, ['lines', 'stderr', 'follow']);
    const { name, action } = parseComponentTarget(request.params['*']);
    if (action)
      throw new ApiError(400, 'KS_BAD_NAME', `${JSON.stringify(request.params['*'])} is not a component name`);
    const lines = parseIntParam('lines', q.lines, 200, 0, MAX_LOG_LINES)!;
    const stderr = parseBool('stderr', q.stderr, false);
    const follow = parseBool('follow', q.follow, false);
    const logDir = ctx.agent.logDirOf?.(name);
    // Only components this device runs or ran (a record in the store): never a path made from any name sent.
    if (logDir === undefined || !ctx.agent.store.component(name)) {
      const members = ctx.agent.engine.unitsOf(name);
      const hint =
        members && !(members.length === 1 && members[0] === name)
          ? `: ${name} has no log of its own, its members do (${members.join(', ')})`
          : '';
      throw new ApiError(
        404,
        'KS_COMPONENT_NOT_FOUND',
        `no component ${JSON.stringify(name)} with a log on this device${hint}`,
      );
    }
    // A component that prints a secret it was given does not publish it through the API (SPEC §16).
    const scrub = (text: string) => ctx.agent.scrubSecrets?.(text) ?? text;
    const stream = stderr ? 'stderr' : 'stdout';
    const path = join(logDir, stderr ? STDERR_LOG : STDOUT_LOG);
    const tail = await lastCompleteLines(path, lines).catch((e: unknown) => {
      throw unreadable(e);
    });
    if (!follow) return { component: name, stream, lines: tail.lines.map(scrub) };

    const release = slots.take('log');
    const sse = openEventStream(reply, { closing: ctx.waits.closingSignal, release });
    for (const text of tail.lines) sse.send('line', { text: scrub(text) });
    followLog(path, tail.end, {
      ...(tail.before && { before: tail.before }),
      signal: sse.signal,
      pollMs: FOLLOW_POLL_MS,
      onText: (text) => {
        for (const line of text.slice(0, -1).split('\n')) sse.send('line', { text: scrub(line) });
      },
      onRotated: () => sse.send('rotated', {}),
    }).then(
      () => sse.close(),
      (e: unknown) => {
        sse.send('error', { code: 'KS_LOG_UNREADABLE', message: (e as Error).message });
        sse.close();
      },
    );
  });
}
