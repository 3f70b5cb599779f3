// `keystonectl graph` in every format, on the example repository.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';

let repo: ExampleRepo;
beforeEach(async () => {
  repo = await exampleRepo();
});
afterEach(() => repo.cleanup());

const graph = (...args: string[]) =>
  runCtl(['graph', 'plans/edge.toml', '--repo', repo.dir, ...repo.trust, ...args], '/');

describe('keystonectl graph', () => {
  it('text: layers, orders and typed edges', async () => {
    const r = await graph();
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'layer 0: influxdb',
        'layer 1: api telemetry',
        'layer 2: web',
        'start order: influxdb api telemetry web',
        'stop order: web telemetry api influxdb',
        'dependencies:',
        '  api → influxdb (hard)',
        '  telemetry → influxdb (ordering)',
        '  web → api (hard)',
        '',
      ].join('\n'),
    );
  });

  it('json (and --json) carry layers, orders and each component with its resolved dependencies', async () => {
    for (const args of [['--format', 'json'], ['--json']]) {
      const out = JSON.parse((await graph(...args)).stdout);
      expect(out.layers).toEqual([['influxdb'], ['api', 'telemetry'], ['web']]);
      expect(out.startOrder).toEqual(['influxdb', 'api', 'telemetry', 'web']);
      expect(out.stopOrder).toEqual(['web', 'telemetry', 'api', 'influxdb']);
      const web = out.components.find((c: { name: string }) => c.name === 'web');
      expect(web).toMatchObject({
        id: 'com.acme.web',
        version: '1.27.0',
        type: 'container',
        layer: 2,
        dependencies: [{ component: 'api', type: 'hard' }],
      });
      expect(web.hash).toMatch(/^v1:[0-9a-f]{64}$/);
    }
  });

  it('mermaid draws hard edges solid and ordering edges dotted, from dependency to dependent', async () => {
    const r = await graph('--format', 'mermaid');
    expect(r.stdout.split('\n')[0]).toBe('flowchart TB');
    expect(r.stdout).toContain('c0_influxdb -- "hard" --> c1_api');
    expect(r.stdout).toContain('c0_influxdb -. "ordering" .-> c2_telemetry');
    expect(r.stdout).toContain('c1_api -- "hard" --> c3_web');
  });

  it('dot ranks each layer together and dashes ordering edges', async () => {
    const r = await graph('--format', 'dot');
    expect(r.stdout).toMatch(/^digraph keystone \{/);
    expect(r.stdout).toContain('{ rank=same; "api"; "telemetry"; }');
    expect(r.stdout).toContain('"influxdb" -> "telemetry" [label="ordering", style=dashed];');
    expect(r.stdout).toContain('"influxdb" -> "api" [label="hard"];');
  });

  it('without PLAN it takes the only plan, and names the choices when there are several', async () => {
    const several = await runCtl(['graph', '--repo', repo.dir, ...repo.trust], '/');
    expect(several.code).toBe(2);
    expect(several.stderr).toContain(
      'choose one of: plans/edge-gateway.toml, plans/edge-processes.toml, plans/edge.toml',
    );
    rmSync(join(repo.dir, 'plans/edge-processes.toml'));
    rmSync(join(repo.dir, 'plans/edge-gateway.toml'));
    await repo.sign();
    const one = await runCtl(['graph', '--repo', repo.dir, ...repo.trust], '/');
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('layer 2: web');
  });

  it('a cycle is refused with exit code 2 and named', async () => {
    repo.edit('recipes/com.acme.influxdb.toml', /$/, '\n[[dependencies]]\nname = "com.acme.web"\ntype = "ordering"\n');
    await repo.sign();
    const r = await graph();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('dependency cycle: influxdb → web → api → influxdb');
    expect(r.stderr).toContain('[KS_DEP_CYCLE]');
  });

  it('an unknown format is a usage error', async () => {
    const r = await graph('--format', 'svg');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--format must be one of text, json, mermaid, dot');
  });
});
