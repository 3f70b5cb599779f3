// The agent loop in-process: a burst of revisions collapses to the newest, and component logs rotate by size.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { componentPaths, startAgent, type Agent } from '../../src/agent/agent.js';
import { createLogger } from '../../src/log/logger.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';

const dirs: string[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close({ stopComponents: true });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function temp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A repository whose plan runs `components` (name → shell command), none with a health check. */
function repo(components: Record<string, string>): string {
  const dir = temp('keystone-loop-repo-');
  mkdirSync(join(dir, 'recipes'));
  mkdirSync(join(dir, 'plans'));
  let plan = '';
  for (const [name, cmd] of Object.entries(components)) {
    writeFileSync(
      join(dir, 'recipes', `${name}.toml`),
      `[metadata]\nname = "com.test.${name}"\nversion = "1.0.0"\n\n[lifecycle.run.exec]\ncommand = "sh"\nargs = ["-c", ${JSON.stringify(cmd)}]\n`,
    );
    plan += `[[components]]\nname = "${name}"\nrecipe = "recipes/${name}.toml"\n\n`;
  }
  writeFileSync(join(dir, 'plans', 'p.toml'), plan);
  return dir;
}

async function agent(opts: { logMaxBytes?: number; logCheckMs?: number } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const runtime = new ProcessRuntime({ installArtifacts: async () => undefined });
  const a = await startAgent({
    planFile: 'plans/p.toml',
    stateDir: temp('keystone-loop-state-'),
    trust: { unsigned: true },
    log: createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l)) }),
    runtimes: { process: runtime },
    probe: async () => ({ ok: true, detail: 'no check', latencyMs: 0 }),
    concurrency: 2,
    graceMs: 2000,
    ...opts,
  });
  agents.push(a);
  return { a, lines };
}

async function until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the agent loop', () => {
  it('a burst of revisions collapses to the newest: the ones in between are never applied', async () => {
    const { a, lines } = await agent();
    const revs = ['one', 'two', 'three'].map((id, i) => ({
      id,
      origin: 'directory' as const,
      source: 'test',
      reader: new DirectoryReader(repo({ [`c${i}`]: 'sleep 100' })),
    }));
    for (const r of revs) a.offer(r);
    await a.idle();
    const applied = a.store
      .history({ limit: 10 })
      .map((h) => h.revision)
      .reverse();
    expect(applied).toEqual(['one', 'three']);
    expect(
      lines.some((l) => l.msg === 'superseded before it was applied' && l.revision === 'two' && l.newer === 'three'),
    ).toBe(true);
    // The newest plan is what runs: c2 only; c0 (from "one") was removed by "three".
    expect(a.store.components().map((c) => [c.name, c.state])).toEqual([['c2', 'running']]);
  });

  it('rotates a component log by size while the component keeps writing to it', async () => {
    const { a } = await agent({ logMaxBytes: 4096, logCheckMs: 50 });
    a.offer({
      id: 'r1',
      origin: 'directory',
      source: 'test',
      reader: new DirectoryReader(
        repo({ chatty: 'while true; do echo 0123456789abcdef0123456789abcdef; sleep 0.005; done' }),
      ),
    });
    await a.idle();
    const logs = componentPaths(a.store.path.replace(/\/state\.db$/, ''), 'chatty').logDir;
    await until(() => existsSync(join(logs, 'stdout.log.1')), 'a rotated stdout.log.1');
    // After rotation the component still writes to stdout.log (its O_APPEND descriptor continues at the new end).
    const sizeAfter = () => readFileSync(join(logs, 'stdout.log')).length;
    const before = sizeAfter();
    await until(() => sizeAfter() !== before, 'stdout.log to keep growing');
    expect(readFileSync(join(logs, 'stdout.log.1'), 'utf8')).toMatch(/^(0123456789abcdef0123456789abcdef\n)+$/);
  });
});
