// Issue 28, finding 7: lines without a newline. An install script wrote one 300 MB line to stderr and failed: the
// agent read it whole as the failure reason (1.8 GiB), and stored and logged all of it; a component drawing a progress
// bar with `\r` and never a newline made every log tail and follow read the whole file and keep the growing line. Now
// every line the agent reads or keeps is cut to MAX_LINE_BYTES (its end kept, after `… [cut: N bytes] `), and tails
// are read from the end in bounded chunks. Shown with 100 MB lines against a real agent: its peak memory
// (/proc/PID/status VmHWM, reset before each act through /proc/PID/clear_refs) grows by far less than the line.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';
import { MAX_LINE_BYTES } from '../../src/core/line-bound.js';
import { STATE_DB_FILE } from '../../src/store/state-store.js';
import { apiOf } from '../support/agent-api.js';
import { is, type AgentHarness, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { until } from '../support/composite-fixture.js';
import { freePorts, sleeper, type ComponentSpec, type StackFixture } from '../support/stack-fixture.js';
import { withStack } from '../support/with-stack.js';

const LINE = 100 * 1000 * 1000;
/** Well below the line: what the agent may grow by while it meets one (today it grew by several times the line). */
const GROWTH_MIB = 48;
/** A cut line: at most the bound, its marker and a little. */
const CUT_LINE = MAX_LINE_BYTES + 64;
const TAIL = 'tail-marker-7f3a';

/** The agent's peak resident memory in MiB since the last reset. */
const peakMiB = (pid: number) =>
  Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
/** Resets the peak to what is resident now (`5` to clear_refs), so the next reading is this act's peak. */
function resetPeak(pid: number): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return peakMiB(pid);
}

/** Starts the agent with its API and waits for the end of its first apply. */
async function startListening(fx: StackFixture, h: AgentHarness): Promise<{ agent: AgentProcess; port: number }> {
  const [port] = (await freePorts(1)) as [number];
  const agent = h.start({
    dir: fx.dir,
    plan: fx.plan,
    trustArgs: fx.trustArgs,
    args: ['--listen', `127.0.0.1:${port}`],
  });
  const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
  expect(end.msg, agent.tail()).toBe('all components running');
  await agent.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the HTTP API');
  return { agent, port };
}

/** The agent answers its health route at once. */
async function answersAtOnce(port: number): Promise<void> {
  const t0 = Date.now();
  const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(10_000) });
  expect(r.status).toBe(200);
  expect(Date.now() - t0, 'GET /healthz answered within 2 s').toBeLessThan(2_000);
}

/** GET with Server-Sent Events: every message so far, and a way to stop. */
async function eventStream(url: string, token: string): Promise<{ messages: EventSourceMessage[]; close(): void }> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  expect(res.status).toBe(200);
  const messages: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (m) => messages.push(m) });
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch {
      /* closed */
    }
  })();
  return { messages, close: () => abort.abort() };
}

describe('lines without a newline', { timeout: 180_000 }, () => {
  it('an install script writing one 100 MB line to stderr and failing: the agent stays small and responsive, and keeps the line cut, ending with its tail', async () => {
    await withStack({ signed: false, components: () => [sleeper('base')] }, async (fx, h) => {
      const { agent, port } = await startListening(fx, h);
      const before = resetPeak(agent.pid);
      const mark = agent.mark();
      fx.add({
        name: 'bigline',
        version: '1.0.0',
        command: 'sleep',
        args: ['1000'],
        install: `head -c ${LINE} /dev/zero | tr '\\0' x >&2; echo ' ${TAIL}' >&2; exit 3`,
      });
      // Read from the store, not the log: a log line of the whole stderr would take this process minutes to parse.
      await until(() => h.history()[0]?.outcome === 'failure', 90_000, 'the failed apply in the history');
      // The script did write the line: the log file holds it whole.
      expect(statSync(join(h.stateDir, 'components', 'bigline', 'logs', 'stderr.log')).size).toBeGreaterThan(LINE);
      const grown = peakMiB(agent.pid) - before;
      expect(grown, `the agent's peak grew by ${grown.toFixed(0)} MiB`).toBeLessThan(GROWTH_MIB);
      await answersAtOnce(port);
      const failed = await agent.waitForLog(
        is.msgIncludes('apply failed'),
        10_000,
        mark,
        'the failed apply in the log',
      );

      // What it keeps: the reason cut, ending with the line's tail, in the store and in the log.
      const cut = new RegExp(
        `^install failed: install script of bigline exited with 3: … \\[cut: at least \\d+ bytes\\] x+ ${TAIL}$`,
      );
      const reason = h.component('bigline')?.reason ?? '';
      expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(MAX_LINE_BYTES);
      expect(reason).toMatch(cut);
      const row = h.history()[0]!;
      expect(row.failed).toHaveLength(1);
      expect(row.failed[0]!.reason).toMatch(cut);
      expect(Buffer.byteLength(row.summary ?? '')).toBeLessThanOrEqual(MAX_LINE_BYTES);
      expect(failed.msg!.endsWith(`${TAIL})`)).toBe(true);
      for (const l of agent.lines(() => true, mark))
        expect(JSON.stringify(l).length, `a log line of ${l.msg}`).toBeLessThan(4 * MAX_LINE_BYTES);
      const db = [STATE_DB_FILE, `${STATE_DB_FILE}-wal`].map((f) => join(h.stateDir, f)).filter(existsSync);
      const dbBytes = db.reduce((n, f) => n + statSync(f).size, 0);
      expect(dbBytes, 'state.db and its WAL').toBeLessThan(4 * 1024 * 1024);
    });
  });

  it('a component drawing a progress bar with \\r and no newline for 100 MB: keystonectl logs answers its bounded end, quickly', async () => {
    await withProgressBar(async ({ fx, h }) => {
      const t0 = Date.now();
      const ctl = await runCtl(['logs', 'progress', '--state-dir', h.stateDir], fx.dir);
      expect(ctl.code, ctl.stderr).toBe(0);
      expect(Date.now() - t0, 'keystonectl logs within 2 s').toBeLessThan(2_000);
      expect(ctl.stdout.length).toBeLessThan(CUT_LINE);
      expect(ctl.stdout).toMatch(/^… \[cut: at least \d+ bytes\] .*\rprogress 100%\n$/s);
    });
  });

  it('the same through the API: its tail answers at once, a follow delivers the line cut once it ends, and the agent stays small', async () => {
    await withProgressBar(async ({ h, agent, port }) => {
      // The complete lines (there are none yet), answered at once and without reading the file whole.
      const api = apiOf(h.stateDir, port);
      const before = resetPeak(agent.pid);
      const t0 = Date.now();
      const tail = await api.get('/v1/logs/progress?lines=200');
      expect(Date.now() - t0, 'GET /v1/logs within 2 s').toBeLessThan(2_000);
      expect(tail).toEqual({ status: 200, body: { component: 'progress', stream: 'stdout', lines: [] } });

      // A follow (the dashboard's): the line once it ends, cut; then the next one.
      const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
      const follow = await eventStream(`http://127.0.0.1:${port}/v1/logs/progress?lines=5&follow=true`, token);
      try {
        await answersAtOnce(port);
        writeFileSync(join(h.workDir('progress'), 'go'), '');
        const lines = await until(
          () => {
            const got = follow.messages
              .filter((m) => m.event === 'line')
              .map((m) => (JSON.parse(m.data) as { text: string }).text);
            return got.length >= 2 ? got : undefined;
          },
          30_000,
          'the progress line and the next one from the follow',
        );
        expect(lines[0]!.length).toBeLessThan(CUT_LINE);
        expect(lines[0]).toMatch(/^… \[cut: at least \d+ bytes\] .*\rprogress 100% done$/s);
        expect(lines.slice(1)).toEqual(['after']);
      } finally {
        follow.close();
      }
      const grown = peakMiB(agent.pid) - before;
      expect(grown, `the agent's peak grew by ${grown.toFixed(0)} MiB`).toBeLessThan(GROWTH_MIB);
    });
  });
});

/**
 * An agent running `progress`, which writes 100 MB of a progress bar redrawn with `\r` (no newline), then waits for the
 * test's word (a file `go` in its work directory) to end the line and write one more.
 */
async function withProgressBar(
  body: (w: { fx: StackFixture; h: AgentHarness; agent: AgentProcess; port: number }) => Promise<void>,
): Promise<void> {
  const progress: ComponentSpec = {
    name: 'progress',
    version: '1.0.0',
    command: 'sh',
    args: [
      '-c',
      `yes 'progress 42%' | tr '\\n' '\\r' | head -c ${LINE}; printf '\\rprogress 100%%'; while [ ! -e go ]; do sleep 0.1; done; printf ' done\\nafter\\n'; exec sleep 1000`,
    ],
  };
  await withStack({ signed: false, components: () => [progress] }, async (fx, h) => {
    const { agent, port } = await startListening(fx, h);
    const log = join(h.stateDir, 'components', 'progress', 'logs', 'stdout.log');
    await until(() => existsSync(log) && statSync(log).size > LINE, 60_000, 'the 100 MB progress bar');
    await body({ fx, h, agent, port });
  });
}
