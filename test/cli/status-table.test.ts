// The human form of `keystonectl status` for composites: members nested under their group, and a revision that could
// not update a composite said on top (the table alone would show healthy previous members).
import { describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/render/status-table.js';

const NOW = Date.parse('2026-11-29T12:00:10Z');
const since = '2026-11-29T12:00:00Z';
const member = (name: string, state: string, pid: number | null) => ({
  name,
  state,
  pid,
  containerId: null,
  version: '0.9.0',
  health: state === 'running' ? 'healthy' : 'unknown',
  restarts: 0,
  since,
  held: false,
  reason: null,
});

describe('keystonectl status with a composite', () => {
  it('prints the group with its derived state and how many members are up, the members nested under it', () => {
    const list = [
      member('api', 'running', 100),
      {
        name: 'app',
        kind: 'composite',
        state: 'stopped',
        pid: null,
        containerId: null,
        version: '1.0.0',
        health: 'unknown',
        restarts: 0,
        held: false,
        members: [member('app/web', 'running', 101), { ...member('app/jobs', 'stopped', null), held: true }],
      },
    ];
    const lines = renderStatus(list, { id: 'dir:abc', planFile: 'plans/p.toml' }, NOW).split('\n');
    expect(lines[3]).toMatch(/^app {2,}stopped {2,}1\.0\.0 {2,}1\/2 members up {2,}unknown/);
    expect(lines[4]).toMatch(/^├─ app\/web {2,}running {2,}0\.9\.0 {2,}101 {2,}healthy {2,}0 {2,}10s ago$/);
    expect(lines[5]).toMatch(/^└─ app\/jobs {2,}stopped \(held\)/);
  });

  it('says which composites the applied revision could not update', () => {
    const out = renderStatus(
      [],
      { id: 'dir:abc', planFile: 'plans/p.toml', rolledBack: [{ group: 'app', revision: 'dir:abc' }] },
      NOW,
    );
    expect(out.split('\n')[1]).toBe(
      '*** app: this revision could not update it; rolled back to the previous members until another revision ***',
    );
    expect(renderStatus([], { id: 'dir:abc', rolledBack: [] }, NOW)).not.toContain('could not update');
  });

  it("says how the applied revision's apply ended, and a recovery beside a failure, never instead of it (SPEC §5)", () => {
    const line = (outcome: unknown) =>
      renderStatus([], { id: 'dir:abc', planFile: 'plans/p.toml', outcome }, NOW).split('\n')[0];
    expect(line({ apply: 'failure', summary: 'failed: api (…)', recovered: null })).toBe(
      'revision dir:abc  plan plans/p.toml  outcome failure',
    );
    expect(
      line({ apply: 'failure', recovered: { at: new Date(NOW - 120_000).toISOString(), summary: 'recovered: …' } }),
    ).toBe('revision dir:abc  plan plans/p.toml  outcome failure, recovered 2m ago');
    expect(line({ apply: 'success', recovered: null })).toBe('revision dir:abc  plan plans/p.toml  outcome success');
    // An agent from before outcomes were shown: nothing said.
    expect(line(undefined)).toBe('revision dir:abc  plan plans/p.toml');
  });

  it('names the commits held at the rollout gate and why (SPEC §14)', () => {
    const held = {
      revision: 'c'.repeat(40),
      target: 'all',
      wave: 'early',
      reason: 'held: waiting for wave canary (0 of 1 successes)',
      checkedAt: since,
    };
    const out = renderStatus([], { id: 'a'.repeat(40), planFile: 'plans/p.toml', rollout: [held] }, NOW);
    expect(out.split('\n')[1]).toBe(
      `commit ${'c'.repeat(12)} (wave early): held: waiting for wave canary (0 of 1 successes)`,
    );
    expect(renderStatus([], { id: 'a'.repeat(40), rollout: [] }, NOW)).not.toContain('wave');
  });
});
