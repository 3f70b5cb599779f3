// Issue 28, finding 10: a failed install's stderr became the note on the commit, which every reader of the repository
// (every device) sees, and a GitHub status: an install script that echoes a configuration value published it. Now
// what is published is scrubbed of every value the component was given (`[config:token]` in its place), while the
// device keeps the whole reason (its API, its history). A real agent following a real Git server
// (test/support/git-world.ts); the note is read from the server's repository with git.
import { describe, expect, it } from 'vitest';
import { DEVICE_NOTES_PREFIX } from '../../src/report/device-notes-ref.js';
import { apiOf } from '../support/agent-api.js';
import { is } from '../support/agent-harness.js';
import { git, outboxDelivered, withGitWorld } from '../support/git-world.js';
import { freePorts, type ComponentSpec } from '../support/stack-fixture.js';

/** Short enough that today's 140-character description carries it whole. */
const TOKEN = 'tok-5f1c9e2a-7d';

/** Echoes its configured token to stderr, as a careless install script might, and fails. */
const leaky: ComponentSpec = {
  name: 'leaky',
  version: '1.0.0',
  command: 'sleep',
  args: ['1000'],
  config: { token: TOKEN },
  // The placeholder bare: it is substituted as one single-quoted shell word (docs/security.md).
  install: 'echo using token {{config.token}} >&2; exit 1',
};

describe('what a failure report publishes', { timeout: 120_000 }, () => {
  it('an install that echoes a config value and fails: the note on the commit names the key, not the value; the device keeps the value', async () => {
    const [port] = (await freePorts(1)) as [number];
    await withGitWorld([leaky], async (w) => {
      const commit = await w.push('leaky: echoes its token and fails');
      const agent = w.start(['--listen', `127.0.0.1:${port}`]);
      await w.noteSays(commit, 'failure');
      // Every status this device sent about the commit: what a GitHub status would say too.
      const sent = await outboxDelivered(w.h, commit);
      expect(sent.map((s) => s.state)).toEqual(['pending', 'failure']);
      for (const s of sent) expect(s.description).not.toContain(TOKEN);

      // On the server, as every reader of the repository sees it.
      const note = await git(w.bare, 'notes', '--ref', `${DEVICE_NOTES_PREFIX}${w.device}`, 'show', commit);
      expect(note).toContain('install script of leaky exited with 1: using token [config:token]');
      expect(note).not.toContain(TOKEN);

      // On the device: the whole reason, value included.
      const row = w.h.history().find((e) => e.revision === commit && e.outcome === 'failure');
      expect(row?.failed).toEqual([
        { name: 'leaky', reason: expect.stringContaining(`using token ${TOKEN}`) as string },
      ]);
      await agent.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the HTTP API');
      const api = apiOf(w.h.stateDir, port);
      const fromApi = (await api.get('/v1/history')).body as {
        entries: Array<{ revision: string; failed?: Array<{ name: string; reason: string }> }>;
      };
      expect(JSON.stringify(fromApi.entries.find((e) => e.revision === commit)?.failed)).toContain(
        `using token ${TOKEN}`,
      );
      const component = (await api.get('/v1/components/leaky')).body as { reason: string | null };
      expect(component.reason).toContain(`using token ${TOKEN}`);
    });
  });
});
