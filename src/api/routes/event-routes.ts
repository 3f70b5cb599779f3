// GET /v1/events: what happens on the device as it happens, as Server-Sent Events (SPEC §10): component states, apply
// progress, rollout holds, image pulls. The dashboard's live view and any script (`curl -N`) read the same stream.
import type { ApiRouter } from '../api-router.js';
import type { AgentEventMap } from '../../agent/agent.js';
import type { ApiContext } from '../api-context.js';
import { openEventStream, StreamSlots, type EventStream } from '../event-stream.js';
import { strictQuery } from '../query-params.js';

/** Every event but `probe`: one per health check of every component would drown what matters (and /metrics counts them). */
export const STREAMED_EVENTS = [
  'state',
  'started',
  'restart',
  'applying',
  'revision',
  'resumed',
  'recovered',
  'held',
  'waiting',
  'superseded',
  'pull',
] as const satisfies ReadonlyArray<keyof AgentEventMap>;

/** A few browser tabs and scripts; each stream is a connection the agent holds open. */
export const MAX_EVENT_STREAMS = 16;

export function registerEventRoutes(server: ApiRouter, ctx: ApiContext): void {
  const slots = new StreamSlots(MAX_EVENT_STREAMS);
  // One listener per event type for all streams, attached while any stream is open (as OperatorWaits does).
  const streams = new Set<EventStream>();
  const listeners = STREAMED_EVENTS.map((type) => ({
    type,
    listener: (e: unknown) => streams.forEach((s) => s.send(type, e)),
  }));
  const subscribe = (on: boolean) => {
    for (const { type, listener } of listeners) {
      if (on) ctx.agent.events.on(type, listener as never);
      else ctx.agent.events.off(type, listener as never);
    }
  };
  server.get('/v1/events', async (request, reply) => {
    strictQuery(request.query, []);
    const release = slots.take('event');
    const stream = openEventStream(reply, { closing: ctx.waits.closingSignal, release });
    // What the stream starts from: a client fetches the views after this and misses nothing in between.
    stream.send('hello', { revision: ctx.agent.store.appliedRevision()?.id ?? null });
    if (streams.size === 0) subscribe(true);
    streams.add(stream);
    void stream.closed.then(() => {
      streams.delete(stream);
      if (streams.size === 0) subscribe(false);
    });
  });
}
