// The routes the dashboard lives on (issue 19), against a running agent on a real loopback listener: the event stream
// (GET /v1/events), a component's log tail and its live follow across a rotation (GET /v1/logs/{name}), the graph
// (GET /v1/graph), the dry runs of stop and start, and how the last instance ended (lastExit).
import { copyFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import { MAX_EVENT_STREAMS } from '../../src/api/routes/event-routes.js';
import { sleeper, type ComponentSpec } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';

/** Writes `line N` five times a second, for ever. */
const talker = (): ComponentSpec => ({
  name: 'talker',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', 'i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.2; done'],
  dependencies: [{ component: 'db', type: 'hard' }],
});

/** An open Server-Sent Events answer: every message so far, and a way to wait for one. */
interface Sse {
  status: number;
  messages: EventSourceMessage[];
  next(pred: (m: EventSourceMessage) => boolean, what: string, ms?: number): Promise<EventSourceMessage>;
  ended: Promise<void>;
  close(): void;
}

describe('the live routes', { timeout: 60_000 }, () => {
  let s: ApiStack;
  let base: string;
  const open: Sse[] = [];

  beforeAll(async () => {
    s = await apiStack({
      components: () => [sleeper('db'), sleeper('side', [{ component: 'db', type: 'ordering' }]), talker()],
    });
    const { addresses } = await s.listen();
    base = addresses.find((a) => a.startsWith('http://'))!;
  });
  afterAll(async () => {
    for (const e of open) e.close();
    await s?.close();
  });

  async function sse(path: string): Promise<Sse> {
    const abort = new AbortController();
    const res = await fetch(base + path, { headers: s.auth(), signal: abort.signal });
    const messages: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (m) => messages.push(m) });
    const ended = (async () => {
      if (!res.body) return;
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      } catch {
        // aborted by close()
      }
    })();
    const stream: Sse = {
      status: res.status,
      messages,
      async next(pred, what, ms = 20_000) {
        let found: EventSourceMessage | undefined;
        await until(() => (found = messages.find(pred)) !== undefined, what, ms);
        return found!;
      },
      ended,
      close: () => abort.abort(),
    };
    open.push(stream);
    return stream;
  }
  const data = (m: EventSourceMessage) => JSON.parse(m.data) as Record<string, unknown>;
  const post = async (url: string) => {
    const r = await inject(s.server, { method: 'POST', url, headers: s.auth() });
    return { status: r.statusCode, body: r.json<Record<string, unknown>>() };
  };

  it('GET /v1/graph: the layers the agent starts in and every dependency, hard and ordering apart', async () => {
    const r = await s.get('/v1/graph');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({
      layers: [['db'], ['side', 'talker']],
      edges: [
        { from: 'side', to: 'db', type: 'ordering' },
        { from: 'talker', to: 'db', type: 'hard' },
      ],
      groups: [],
    });
  });

  it('GET /v1/events streams component states as they change, from a hello on', async () => {
    const events = await sse('/v1/events');
    expect(events.status).toBe(200);
    const hello = await events.next((m) => m.event === 'hello', 'the hello');
    expect(data(hello)).toEqual({ revision: s.agent.store.appliedRevision()!.id });
    const restart = await post('/v1/components/db:restart?wait=health');
    expect(restart.status).toBe(200);
    await events.next(
      (m) => m.event === 'state' && data(m).component === 'talker' && data(m).state === 'running',
      'talker running again',
    );
    const states = events.messages
      .filter((m) => m.event === 'state')
      .map((m) => `${String(data(m).component)} ${String(data(m).state)}`);
    // Dependents first down, the dependency first up; the ordering dependent is left alone.
    expect(states.filter((x) => x.startsWith('db ') || x.startsWith('talker '))).toEqual([
      'talker stopping',
      'talker stopped',
      'db stopping',
      'db stopped',
      'db starting',
      'db running',
      'talker starting',
      'talker running',
    ]);
    expect(states.some((x) => x.startsWith('side '))).toBe(false);
    expect(events.messages.filter((m) => m.event === 'started').map((m) => data(m).component)).toEqual([
      'db',
      'talker',
    ]);
    events.close();
  });

  it(`GET /v1/events: at most ${MAX_EVENT_STREAMS} streams at once, the next one refused with a reason`, async () => {
    const streams = await Promise.all(Array.from({ length: MAX_EVENT_STREAMS }, () => sse('/v1/events')));
    expect(streams.map((x) => x.status)).toEqual(Array(MAX_EVENT_STREAMS).fill(200));
    const over = await fetch(`${base}/v1/events`, { headers: s.auth() });
    expect(over.status).toBe(503);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('KS_TOO_MANY_STREAMS');
    // A stream that ends gives its place back.
    streams[0]!.close();
    let again: Response | undefined;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      again = await fetch(`${base}/v1/events`, { headers: s.auth() });
      if (again.status === 200) break;
      await again.body?.cancel();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(again?.status).toBe(200);
    await again?.body?.cancel();
    for (const x of streams) x.close();
  });

  it('GET /v1/logs/{name}: the last lines, then every new one live, across a rotation', async () => {
    // The last three lines, in order (polled: the talker restarted with db above, and counts again from 1).
    let tail: { component: string; stream: string; lines: string[] } | undefined;
    const consecutive = (lines: string[]) =>
      lines.map((l) => Number(/^line (\d+)$/.exec(l)?.[1])).every((x, i, a) => i === 0 || x === a[i - 1]! + 1);
    const deadline = Date.now() + 10_000;
    for (;;) {
      tail = (await s.get('/v1/logs/talker?lines=3')).json();
      if ((tail!.lines.length === 3 && consecutive(tail!.lines)) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(tail!.component).toBe('talker');
    expect(tail!.stream).toBe('stdout');
    expect(tail!.lines).toHaveLength(3);
    expect(consecutive(tail!.lines)).toBe(true);

    const follow = await sse('/v1/logs/talker?lines=2&follow=true');
    const number = (m: EventSourceMessage) => Number(/^line (\d+)$/.exec(String(data(m).text))?.[1]);
    const first = await follow.next((m) => m.event === 'line', 'the first line');
    await follow.next((m) => m.event === 'line' && number(m) >= number(first) + 4, 'new lines');
    const nums = follow.messages.filter((m) => m.event === 'line').map(number);
    // No line lost or repeated.
    expect(nums).toEqual(nums.map((_, i) => nums[0]! + i));

    // Rotation as the agent does it: copy, then truncate in place.
    const log = join(s.stateDir, 'components', 'talker', 'logs', 'stdout.log');
    copyFileSync(log, `${log}.1`);
    truncateSync(log, 0);
    await follow.next((m) => m.event === 'rotated', 'the rotation');
    const last = follow.messages
      .filter((m) => m.event === 'line')
      .map(number)
      .at(-1)!;
    await follow.next((m) => m.event === 'line' && number(m) >= last + 3, 'lines after the rotation');
    const after = follow.messages.filter((m) => m.event === 'line').map(number);
    expect(after).toEqual(after.map((_, i) => after[0]! + i));
    follow.close();
  });

  it('GET /v1/logs/{name}: an unknown component is a 404, a bad name a 400, stderr on request', async () => {
    const unknown = await s.get('/v1/logs/nobody');
    expect([unknown.statusCode, unknown.json<{ error: { code: string } }>().error.code]).toEqual([
      404,
      'KS_COMPONENT_NOT_FOUND',
    ]);
    const bad = await s.get('/v1/logs/..%2f..%2fetc');
    expect(bad.statusCode).toBe(400);
    const err = await s.get('/v1/logs/db?stderr=true');
    expect(err.json()).toEqual({ component: 'db', stream: 'stderr', lines: [] });
    expect((await s.get('/v1/logs/db?lines=-1')).statusCode).toBe(400);
  });

  it('dry runs of stop and start say what they would touch and touch nothing', async () => {
    const pids = s.livePids();
    expect(await post('/v1/components/db:stop?dry=true')).toEqual({
      status: 200,
      body: { stopOrder: ['talker', 'db'] },
    });
    expect(await post('/v1/components/db:start?dry=true')).toEqual({
      status: 200,
      body: { startOrder: [], waitingFor: [] },
    });
    expect(s.livePids()).toEqual(pids);
    expect((await post('/v1/components/talker:stop')).status).toBe(200);
    expect(await post('/v1/components/talker:start?dry=true')).toEqual({
      status: 200,
      body: { startOrder: ['talker'], waitingFor: [] },
    });
    expect(s.agent.store.component('talker')?.state).toBe('stopped');
    expect((await post('/v1/components/talker:start')).status).toBe(200);
  });

  it('lastExit: how the last instance ended, kept after the crash restart', async () => {
    const before = s.livePids().talker!;
    process.kill(before, 'SIGKILL');
    await until(
      () =>
        s.livePids().talker !== undefined &&
        s.livePids().talker !== before &&
        s.agent.store.component('talker')?.state === 'running',
      'the crash restart',
    );
    const view = (await s.get('/v1/components/talker')).json<{
      lastExit: { code: number | null; signal: string | null; at: string };
    }>();
    expect(view.lastExit).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(Date.now() - Date.parse(view.lastExit.at)).toBeLessThan(60_000);
    expect((await s.get('/v1/components/side')).json<{ lastExit: unknown }>().lastExit).toBeNull();
  });
});
