// Issue 17 in the human forms: `keystonectl status` names the agent that answers and a refused newest revision above
// the table (also before any revision is applied), `keystonectl sync` says what became of its look, and
// `keystonectl --version` / `-V` print the package's version.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderSyncOutcome } from '../../src/cli/commands/sync.js';
import { agentLine, rejectedLine, renderStatus } from '../../src/cli/render/status-table.js';
import { runCtl } from '../support/cli-run.js';

const NOW = Date.parse('2026-11-29T12:05:00Z');
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const C = '1a2b3c4d'.repeat(5);
const agent = { pid: 23401, version: '0.1.0', startedAt: '2026-11-29T12:00:00Z' };
const replayed = {
  revision: C,
  at: '2026-11-29T12:04:00Z',
  code: 'KS_SIGNATURE_REPLAYED',
  reason: 'KS_SIGNATURE_REPLAYED: signed at 2026-11-29T12:20:18.000Z, earlier than the revision applied last',
};

describe('keystonectl status: the agent and a refused newest revision', () => {
  it('the agent line: pid, version, since when', () => {
    expect(agentLine(agent, NOW)).toBe('agent pid 23401  keystone 0.1.0  started 5m ago');
    expect(agentLine({ pid: 7 }, NOW)).toBe('agent pid 7');
    // An agent from before issue 17 sends none: no line.
    expect(agentLine(undefined, NOW)).toBeUndefined();
    expect(agentLine({ version: '1' }, NOW)).toBeUndefined();
  });

  it('the refusal with its code, once, whichever way the reason carries it', () => {
    expect(rejectedLine(replayed)).toBe(`newest commit 1a2b3c4d rejected: ${replayed.reason}`);
    const invalid = {
      revision: 'dir:0123456789ab',
      code: 'KS_UNKNOWN_KEY',
      reason: 'invalid: 1 error(s), first: recipes/db.toml:7: lifecycle.run.x: unknown key "x" [KS_UNKNOWN_KEY]',
    };
    expect(rejectedLine(invalid)).toBe(
      'newest revision dir:0123456789ab rejected: KS_UNKNOWN_KEY: invalid: 1 error(s), first: recipes/db.toml:7: lifecycle.run.x: unknown key "x"',
    );
    expect(rejectedLine({ revision: 'manual:abc', code: null, reason: 'something' })).toBe(
      'newest revision manual:abc rejected: something',
    );
    expect(rejectedLine(null)).toBeUndefined();
  });

  it('both above the revision and policy lines; nothing new when the agent sends neither', () => {
    const lines = renderStatus([], { id: 'a'.repeat(40), planFile: 'plans/p.toml' }, NOW, undefined, {
      agent,
      rejected: replayed,
    }).split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'agent pid 23401  keystone 0.1.0  started 5m ago',
      `revision ${'a'.repeat(40)}  plan plans/p.toml`,
      `newest commit 1a2b3c4d rejected: ${replayed.reason}`,
      'no components',
    ]);
    expect(renderStatus([], { id: 'dir:abc' }, NOW)).toBe('revision dir:abc\nno components\n');
  });

  it('before any revision is applied (the 404 carries them)', () => {
    expect(renderStatus([], undefined, NOW, undefined, { agent, rejected: replayed })).toBe(
      `agent pid 23401  keystone 0.1.0  started 5m ago\nrevision: none applied yet\nnewest commit 1a2b3c4d rejected: ${replayed.reason}\nno components\n`,
    );
  });
});

describe('keystonectl sync: the outcome in one line', () => {
  const base = { sync: 'done', code: null, applied: C, rollout: [] };
  it('applied, failed, rejected, held, nothing new', () => {
    expect(
      renderSyncOutcome({ ...base, outcome: 'applied', revision: C, summary: '2 started, 2 stopped, 2 untouched' }),
    ).toBe('applied 1a2b3c4d1a2b: 2 started, 2 stopped, 2 untouched\n');
    expect(renderSyncOutcome({ ...base, outcome: 'failed', revision: C, summary: 'api: not healthy within 10s' })).toBe(
      'apply of 1a2b3c4d1a2b failed: api: not healthy within 10s\n',
    );
    expect(
      renderSyncOutcome({
        ...base,
        outcome: 'rejected',
        revision: 'b'.repeat(40),
        summary: replayed.reason,
        code: replayed.code,
      }),
    ).toBe(`bbbbbbbbbbbb rejected: ${replayed.reason}; still running 1a2b3c4d1a2b\n`);
    const held = {
      revision: 'c'.repeat(40),
      wave: 'early',
      reason: 'held: waiting for wave canary (0 of 1 successes)',
    };
    expect(
      renderSyncOutcome({ ...base, outcome: 'held', revision: held.revision, summary: held.reason, rollout: [held] }),
    ).toBe(`cccccccccccc ${held.reason}\n`);
    expect(renderSyncOutcome({ ...base, outcome: 'applied', revision: C, summary: 's', rollout: [held] })).toBe(
      `applied 1a2b3c4d1a2b: s\ncommit cccccccccccc (wave early): ${held.reason}\n`,
    );
    expect(
      renderSyncOutcome({
        ...base,
        outcome: 'unchanged',
        revision: 'dir:0123456789ab',
        summary: 'nothing new: the device runs the newest revision of its source',
      }),
    ).toBe('nothing new: the device runs the newest revision of its source (dir:0123456789ab)\n');
    expect(
      renderSyncOutcome({
        ...base,
        outcome: 'unchanged',
        revision: null,
        applied: null,
        summary: 'the source offers no revision this device can run yet',
      }),
    ).toBe('the source offers no revision this device can run yet\n');
  });

  it('bad flags are usage errors (2), before any request', async () => {
    expect((await runCtl(['sync', 'now'], '/')).code).toBe(2);
    const r = await runCtl(['sync', '--timeout', 'soon'], '/');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('usage: keystonectl sync [--no-wait]');
  });
});

describe('keystonectl --version', () => {
  it('prints the package version, as keystone --version does; the usage lists it and sync', async () => {
    expect(await runCtl(['--version'], '/')).toEqual({ code: 0, stdout: `keystonectl ${VERSION}\n`, stderr: '' });
    expect(await runCtl(['-V'], '/')).toEqual({ code: 0, stdout: `keystonectl ${VERSION}\n`, stderr: '' });
    const help = await runCtl(['--help'], '/');
    expect(help.stdout).toContain('       keystonectl --version\n');
    expect(help.stdout).toMatch(/\n {2}sync {7}the agent looks at its source now/);
    expect(help.stdout).toContain('keystonectl stop (NAME | --all)');
    // Not a command of any kind, whatever Object.prototype has.
    expect((await runCtl(['constructor'], '/')).code).toBe(2);
  });
});
