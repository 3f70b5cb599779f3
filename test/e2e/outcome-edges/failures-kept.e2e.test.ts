// A commit that failed on this device stays failed however much history comes after it (SPEC §5; outcomes.ts rule 2,
// store/apply-history.ts). Issue 27's review found that how the commit the device runs stood was read from the newest
// 200 history rows alone: after 200 refused commits (a row each) its failure was out of sight, so a restart applied the
// commit again as a new one and — its component having recovered meanwhile — reported `success` for a commit that had
// failed here. Now a revision's own rows are read (by an index), whatever came after them, and failures are never
// pruned. Pinned here with as many refused commits as that window held: the restart resumes the commit, its failure
// stands, and nothing but its failure is ever reported for it.
//
// A real agent following a real Git server (test/support/git-world.ts). The refused commits are unsigned edits,
// written into the server's repository beforehand (one `git fast-import`) under a ref the agent does not follow; each
// becomes the tip of the followed branch in turn, and POST /v1/sync?wait=done has the agent look at it and refuse it.
// Those looks are most of the test's time, and there are no more of them than the old window needs.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { is } from '../../support/agent-harness.js';
import { until } from '../../support/composite-fixture.js';
import {
  appliesOf,
  closeServer,
  failing,
  git,
  outboxDelivered,
  outcomes,
  RESUMED,
  withGitWorld,
  type GitWorld,
} from '../../support/git-world.js';
import { GIT_ENV } from '../../support/git-env.js';
import { freePorts } from '../../support/stack-fixture.js';

/**
 * A revision's standing used to be read from the newest 200 rows of the whole history (outcomes.ts STANDING_LOOKBACK,
 * now a limit on the revision's own rows): this many refusals put every row of the failed commit out of that window.
 */
const OLD_WINDOW = 200;
const EDITS_REF = 'refs/unfollowed/edits';

/**
 * `n` commits on top of `base`, each an edit of the plan without a new signature (its SHA256SUMS line no longer
 * matches), written straight into the server's repository by one `git fast-import`, under a ref the agent does not
 * follow; oldest first.
 */
function unsignedEdits(w: GitWorld, base: string, n: number): string[] {
  const plan = readFileSync(join(w.fx.dir, w.fx.plan), 'utf8');
  const now = Math.floor(Date.now() / 1000);
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  let stream = '';
  for (let i = 0; i < n; i++) {
    stream += `commit ${EDITS_REF}\ncommitter Test <test@example.invalid> ${now} +0000\n${data(`unsigned edit ${i}`)}`;
    if (i === 0) stream += `from ${base}\n`;
    stream += `M 100644 inline ${w.fx.plan}\n${data(`${plan}# unsigned edit ${i}\n`)}`;
  }
  execFileSync('git', ['-C', w.bare, 'fast-import', '--quiet'], { input: stream, env: GIT_ENV });
  return execFileSync('git', ['-C', w.bare, 'rev-list', '--reverse', `${base}..${EDITS_REF}`], {
    encoding: 'utf8',
    env: GIT_ENV,
  })
    .trim()
    .split('\n');
}

describe('a failed commit, then more refused commits than the standing used to read', { timeout: 300_000 }, () => {
  it(`after ${OLD_WINDOW} refusals and a restart, the failed commit is resumed and still failure: it is never applied again or reported success`, async () => {
    const [port, api] = (await freePorts(2)) as [number, number];
    let listener: Server | undefined;
    await withGitWorld([failing('svc', '1.0.0', `tcp://127.0.0.1:${port}`)], async (w) => {
      try {
        const x = await w.push('svc never healthy (nothing listens yet)');
        const edits = unsignedEdits(w, x, OLD_WINDOW);
        expect(edits).toHaveLength(OLD_WINDOW);
        const first = w.start(['--listen', `127.0.0.1:${api}`]);
        await w.noteSays(x, 'failure');
        // The component recovers by itself: a `recovered` row, no report.
        listener = createServer((s) => s.destroy());
        await new Promise<void>((r) => listener!.listen(port, '127.0.0.1', r));
        await until(
          () => w.h.history().some((e) => e.revision === x && e.outcome === 'recovered'),
          20_000,
          'the recovery row',
        );

        await first.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the HTTP API');
        const token = readFileSync(join(w.h.stateDir, 'api-token'), 'utf8').trim();
        for (const c of edits) {
          await git(w.bare, 'update-ref', 'refs/heads/main', c);
          const r = await fetch(`http://127.0.0.1:${api}/v1/sync?wait=done`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}` },
          });
          expect(r.status, await r.text()).toBe(200);
        }
        // Each edit was refused, so the commit's own rows are older than the newest OLD_WINDOW rows.
        expect(
          w.h
            .history()
            .slice(0, OLD_WINDOW)
            .map((e) => `${e.revision} ${e.outcome}`),
        ).toEqual(edits.map((c) => `${c} rejected`).reverse());

        await first.stop();
        const second = w.start();
        const settled = await second.waitForLog(
          is.applyEnd,
          30_000,
          0,
          `the restarted agent to take up ${x.slice(0, 12)} again`,
        );
        expect(settled.msg, 'resumed, its outcome standing').toMatch(
          new RegExp(`^${RESUMED}: its outcome stands \\(failure\\)`),
        );
        expect(
          appliesOf(w.h, x).map((e) => e.outcome),
          `history of the commit: ${outcomes(w.h, x).join(', ')}`,
        ).toEqual(['failure']);
        expect(
          (await outboxDelivered(w.h, x)).map((r) => r.state),
          'every status enqueued for the commit',
        ).toEqual(['pending', 'failure']);
        expect(await w.noted(x), 'every status the server received for the commit').toEqual(['pending', 'failure']);
      } finally {
        await closeServer(listener);
      }
    });
  });
});
