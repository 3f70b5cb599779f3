// The container engine: a plan with containers and no engine (its sockets pointed at files that are not there) fails;
// without containers, no engine is no fault; with Docker here, the one that answers is named.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkContainerEngine } from '../../src/doctor/container-engine-check.js';
import type { CurrentPlan } from '../../src/doctor/current-plan.js';
import { needs } from '../support/requirements.js';
import { desired } from '../support/state-builder.js';
import { facts, scratch, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
beforeAll(() => {
  s = scratch();
});
afterAll(() => s.cleanup());

const withContainer: CurrentPlan = {
  kind: 'known',
  state: desired([{ name: 'api' }, { name: 'web', image: 'docker.io/library/nginx:1.27-alpine' }]),
  planFile: 'plans/test.toml',
  from: 'test',
};
const processesOnly: CurrentPlan = {
  kind: 'known',
  state: desired([{ name: 'api' }]),
  planFile: 'plans/test.toml',
  from: 'test',
};
const noEngine = () =>
  facts({ engineSockets: { docker: [join(s.dir, 'docker.sock')], podman: [join(s.dir, 'podman.sock')] } });

describe('container-engine', () => {
  it('fails a plan with containers when no engine answers, naming the components and every socket tried', async () => {
    const r = await checkContainerEngine(withContainer, noEngine());
    expect(r).toMatchObject({ check: 'container-engine', status: 'fail', code: 'KS_CONTAINER_ENGINE_UNAVAILABLE' });
    expect(r.detail).toBe(
      `the plan runs web as container, and no Docker or Podman engine answered; tried ${join(s.dir, 'docker.sock')} (no such socket), ${join(s.dir, 'podman.sock')} (no such socket)`,
    );
    expect(r.fix).toContain('DOCKER_HOST');
  });

  it('skips without containers: no engine is no fault', async () => {
    const r = await checkContainerEngine(processesOnly, noEngine());
    expect(r).toMatchObject({ status: 'skip' });
    expect(r.detail).toMatch(/; not needed: the plan runs no containers$/);
    expect(await checkContainerEngine({ kind: 'unknown', why: 'x' }, noEngine())).toMatchObject({ status: 'skip' });
  });

  const docker = needs('docker');
  describe.skipIf(docker.skip)(docker.title('with Docker'), () => {
    it('names the engine that answers, its socket and version', async () => {
      const r = await checkContainerEngine(withContainer, facts());
      expect(r).toMatchObject({ status: 'pass' });
      expect(r.detail).toMatch(/^(docker|podman) at \S+ \((Docker|Podman) \S+, API \S+\) for web$/);
      expect((await checkContainerEngine(processesOnly, facts())).detail).toMatch(
        /; not needed: the plan runs no containers$/,
      );
    });
  });
});
