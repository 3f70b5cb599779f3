// Issue 29, "reports that say more": a real agent following a real Git server (test/support/git-world.ts) runs a
// real process that prints a few lines, one of them with the token it was given and one in colour, and exits 3, so the
// revision fails. What the device hands its reporter (the outbox rows in its SQLite state database) carries the
// agent's version and the device's health on every status, and on the failure the process's last lines: the token
// named, not shown, the colour codes gone. The note on the server carries the same lines.
import Sqlite from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/package-manifest.js';
import { DEVICE_NOTES_PREFIX } from '../../src/report/device-notes-ref.js';
import { STATE_DB_FILE } from '../../src/store/state-store.js';
import type { ReportDetails } from '../../src/report/commit-status.js';
import { runCtl } from '../support/cli-run.js';
import { git, outboxDelivered, withGitWorld } from '../support/git-world.js';
import { freePorts, type ComponentSpec } from '../support/stack-fixture.js';

const TOKEN = 'tok-29c4e7a1b8d5';

/** Prints, names its token on stderr, and exits 3; its check (a closed port) never passes, so the apply fails for sure. */
function noisy(closedPort: number): ComponentSpec {
  const script = [
    "console.log('noisy starting')",
    "console.log('\\x1b[32mgreen\\x1b[0m config read')",
    "console.error('cannot log in with token ' + process.argv[1])",
    "console.error('giving up')",
    'process.exit(3)',
  ].join('; ');
  return {
    name: 'noisy',
    version: '1.0.0',
    command: 'node',
    args: ['-e', script, '{{config.token}}'],
    config: { token: TOKEN },
    restartPolicy: 'never',
    health: { check: `http://127.0.0.1:${closedPort}/never`, interval: '200ms', timeout: '150ms', failureThreshold: 5 },
  };
}

/** Every status of `commit` with its details, oldest first, as the reporter is handed them. */
function detailsOf(stateDir: string, commit: string): Array<{ state: string; details: ReportDetails | null }> {
  const db = new Sqlite(join(stateDir, STATE_DB_FILE), { readonly: true, fileMustExist: true, timeout: 5_000 });
  try {
    const rows = db
      .prepare('SELECT state, details FROM status_outbox WHERE "commit" = ? ORDER BY id')
      .all(commit) as Array<{ state: string; details: string | null }>;
    return rows.map((r) => ({
      state: r.state,
      details: r.details === null ? null : (JSON.parse(r.details) as ReportDetails),
    }));
  } finally {
    db.close();
  }
}

describe('what a report says beside its state', { timeout: 120_000 }, () => {
  it('a process that prints and exits 3: every status has the version and health; the failure has its last lines, scrubbed and plain', async () => {
    const [closed] = (await freePorts(1)) as [number];
    await withGitWorld([noisy(closed)], async (w) => {
      const commit = await w.push('noisy: prints, names its token and exits 3');
      w.start();
      await w.noteSays(commit, 'failure');
      const sent = await outboxDelivered(w.h, commit);
      expect(sent.map((s) => s.state)).toEqual(['pending', 'failure']);

      const rows = detailsOf(w.h.stateDir, commit);
      for (const r of rows) {
        expect(r.details?.agent, r.state).toBe(packageVersion());
        // The CI machines are Linux: uptime, load, memory and the state directory's disk are always there.
        expect(r.details?.health?.uptimeS, r.state).toBeGreaterThan(0);
        expect(r.details?.health?.load1, r.state).toBeGreaterThanOrEqual(0);
        expect(r.details?.health?.memFreeBytes, r.state).toBeGreaterThan(0);
        expect(r.details?.health?.diskFreeBytes, r.state).toBeGreaterThan(0);
      }
      expect(rows[0]!.details?.log).toBeUndefined();
      const log = rows[1]!.details?.log ?? [];
      expect(log).toEqual([
        'noisy: noisy starting',
        'noisy: green config read',
        'noisy: cannot log in with token [config:token]',
        'noisy: giving up',
      ]);
      expect(JSON.stringify(rows)).not.toContain(TOKEN);

      // On the server, as every reader of the repository sees it: the lines, and never the token.
      const note = await git(w.bare, 'notes', '--ref', `${DEVICE_NOTES_PREFIX}${w.device}`, 'show', commit);
      expect(note).not.toContain(TOKEN);
      expect(note).toContain('noisy: cannot log in with token [config:token]');
      expect(note).not.toMatch(/\p{Cc}(?<!\n)/u);

      // The device itself keeps its log whole (keystonectl logs): only what is published is scrubbed.
      const { stdout } = await runCtl(['logs', 'noisy', '--stderr', '--state-dir', w.h.stateDir], w.h.stateDir);
      expect(stdout).toContain(`cannot log in with token ${TOKEN}`);
    });
  });
});
