// A composite's all-or-nothing update when things go wrong around it: a set of members that never ran healthy is
// nothing to roll back to; the agent killed as the rollback begins, or in the middle of it, still ends on the members
// that last ran healthy together; a revision held back after a rollback is reported as failed, not as a success.
import { afterEach, describe, expect, it } from 'vitest';
import { CompositeAgent, compositeRepo, q, type CompositeRepo } from '../support/composite-fixture.js';
import { freePorts } from '../support/stack-fixture.js';

const FAST = ['interval = "200ms"', 'timeout = "1s"', 'failure_threshold = 50'];

/** app/api: fake-reports on a configured port, exported. */
const api = (repo: CompositeRepo, version = '0.9.0') =>
  [
    '[metadata]',
    'name = "com.test.api"',
    `version = ${q(version)}`,
    '[[artifacts]]',
    'uri = "../artifacts/fake-reports.mjs"',
    `sha256 = ${q(repo.sha('fake-reports.mjs'))}`,
    '[config]',
    'port = 1',
    '[exports]',
    'port = "{{config.port}}"',
    '[lifecycle.run]',
    '[lifecycle.run.exec]',
    'command = "node"',
    `args = ["fake-reports.mjs", "--port", "{{config.port}}", "--title", "t", "--version-label", ${q(version)}]`,
    '[lifecycle.run.health]',
    'check = "http://127.0.0.1:{{config.port}}/health"',
    ...FAST,
    '',
  ].join('\n');

/** app/side: binds the api's port (in its args); with `broken`, a check on a closed port that never passes (2 s). */
const side = (broken?: number) =>
  [
    '[metadata]',
    'name = "com.test.side"',
    'version = "1.0.0"',
    '[lifecycle.run]',
    '[lifecycle.run.exec]',
    'command = "sleep"',
    'args = ["1000", "{{deps.api.exports.port}}"]',
    ...(broken
      ? [
          '[lifecycle.run.health]',
          `check = "tcp://127.0.0.1:${broken}"`,
          'interval = "200ms"',
          'timeout = "150ms"',
          'failure_threshold = 10',
        ]
      : []),
    '[[dependencies]]',
    'name = "com.test.api"',
    '',
  ].join('\n');

const APP = [
  '[metadata]',
  'name = "com.test.app"',
  'version = "2.0.0"',
  '[[members]]',
  'name = "api"',
  'recipe = "recipes/api.toml"',
  '[[members]]',
  'name = "side"',
  'recipe = "recipes/side.toml"',
  '',
].join('\n');
const plan = (port: number) =>
  `[[components]]\nname = "app"\nrecipe = "recipes/app.toml"\n[components.config.api]\nport = ${port}\n`;

let ca: CompositeAgent | undefined;
let repo: CompositeRepo | undefined;
afterEach(async () => {
  await ca?.cleanup();
  repo?.cleanup();
  ca = undefined;
  repo = undefined;
});

/** R1: api on p1, side bound to it, both healthy. */
async function healthy(p1: number): Promise<{ ca: CompositeAgent; repo: CompositeRepo }> {
  repo = compositeRepo();
  repo.write({
    'recipes/api.toml': api(repo),
    'recipes/side.toml': side(),
    'recipes/app.toml': APP,
    [repo.plan]: plan(p1),
  });
  ca = new CompositeAgent(repo);
  expect((await ca.start()).msg).toBe('all components running');
  return { ca, repo };
}

const inputsOf = (a: CompositeAgent, name: string) => a.h.component(name)?.inputs;

describe('composite rollback at the edges', { timeout: 60_000 }, () => {
  it('a composite that never ran healthy as a whole is not "rolled back" to the members that happened to start', async () => {
    const [p1, closed] = (await freePorts(2)) as [number, number];
    repo = compositeRepo();
    repo.write({
      'recipes/api.toml': api(repo),
      'recipes/side.toml': side(closed),
      'recipes/app.toml': APP,
      [repo.plan]: plan(p1),
    });
    ca = new CompositeAgent(repo);
    expect((await ca.start()).msg).toMatch(/^apply failed/);
    const r2 = await ca.push({ [repo.plan]: plan(p1 + 1) });
    expect(r2.end.msg).toMatch(/^apply failed/);
    expect(ca.h.history()[0]!.summary).not.toContain('rolled back');
    // Both members stay in the plan and the store: none was removed as "undone".
    expect(
      ca.h
        .components()
        .map((c) => c.name)
        .sort(),
    ).toEqual(['app/api', 'app/side']);
    expect((await ca.get<{ rolledBack: unknown[] }>('/v1/revision')).body.rolledBack).toEqual([]);
  });

  it('killed as the rollback begins: the next start rolls back and reports the failure, not a success', async () => {
    const [p1, p2, closed] = (await freePorts(3)) as [number, number, number];
    const { ca: a, repo: r } = await healthy(p1);
    const mark = a.agent.mark();
    r.write({ 'recipes/side.toml': side(closed), [r.plan]: plan(p2) });
    await a.agent.waitForLog((l) => /rolling the composite back/.test(l.msg ?? ''), 30_000, mark, 'the rollback');
    await a.agent.kill9();
    const end = await a.start();
    expect(end.msg).toMatch(/^apply failed/);
    const last = a.h.history()[0]!;
    expect(last.outcome).toBe('failure');
    expect(last.summary).toContain('app rolled back to its previous members');
    expect(inputsOf(a, 'app/api')).toEqual({ 'config.port': String(p1) });
    expect(inputsOf(a, 'app/side')).toEqual({ 'deps.api.exports.port': String(p1) });
    expect(a.h.components().map((c) => c.state)).toEqual(['running', 'running']);
  });

  it('killed in the middle of the rollback: the next start ends on the members that last ran healthy together', async () => {
    const [p1, p2, closed] = (await freePorts(3)) as [number, number, number];
    const { ca: a, repo: r } = await healthy(p1);
    const mark = a.agent.mark();
    r.write({ 'recipes/side.toml': side(closed), [r.plan]: plan(p2) });
    const rb = await a.agent.waitForLog(
      (l) => /rolling the composite back/.test(l.msg ?? ''),
      30_000,
      mark,
      'the rollback',
    );
    await a.agent.waitForLog(
      (l) => l.component === 'app/api' && l.state === 'starting',
      30_000,
      a.agent.lines(() => true).indexOf(rb),
      'api@R1 starting in the rollback',
    );
    await a.agent.kill9();
    expect((await a.start()).msg).toMatch(/^apply failed/);
    // Not api@R2 beside side@R1 (bound to a port nothing serves): both as R1 ran them.
    expect(inputsOf(a, 'app/api')).toEqual({ 'config.port': String(p1) });
    expect(inputsOf(a, 'app/side')).toEqual({ 'deps.api.exports.port': String(p1) });
    expect(a.h.components().map((c) => c.state)).toEqual(['running', 'running']);
  });

  it('the held revision, resumed after a restart, keeps its failure and the composite its previous members (SPEC §5)', async () => {
    const [p1, p2, closed] = (await freePorts(3)) as [number, number, number];
    const { ca: a, repo: r } = await healthy(p1);
    const { end } = await a.push({ 'recipes/side.toml': side(closed), [r.plan]: plan(p2) });
    expect(end.msg).toMatch(/^apply failed/);
    const failed = a.h.history()[0]!;
    expect(failed).toMatchObject({ outcome: 'failure' });
    expect(await a.agent.stop()).toEqual({ code: 0, signal: null });
    await a.start();
    // A restart re-reports nothing: no new row, and the resume says the failure stands and why the composite is held.
    const resumed = a.agent.lines(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('resumed the revision applied last'),
    );
    expect(resumed).toMatchObject([{ outcome: 'failure' }]);
    expect(a.h.history()[0]).toEqual(failed);
    expect(
      a.agent.lines(
        (l) =>
          l.msg ===
          'this revision could not update these composites: they stay at their previous members until another revision',
      ),
    ).toMatchObject([{ groups: ['app'] }]);
    expect(inputsOf(a, 'app/api')).toEqual({ 'config.port': String(p1) });
  });
});
