// fleet status's check of the reports (SPEC §15) over a real repository: the devices' notes and rollout refs written by
// the Git notes reporter with their signer, certificates in devices/ at the commit, or published by a device beside
// its notes (--certificate), which fleet status uses and the gates do not.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reportKeyLine } from '../../src/identity/certificate.js';
import { signCertificate } from '../../src/identity/sign-certificate.js';
import { reportSigner } from '../../src/identity/report-signature.js';
import { readFleetReports } from '../../src/fleet-view/fleet-reports-read.js';
import { readRolloutRefs } from '../../src/fleet-view/fleet-rollout-read.js';
import { verifyFleetReports } from '../../src/fleet-view/fleet-verify.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { AGE, ENROLL, keyNamed } from '../identity/identity-fixture.js';
import { git, status } from '../support/notes-fixture.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const A = keyNamed('dev-a key');
const B = keyNamed('dev-b key');
const cert = (device: string, key: typeof A) =>
  signCertificate(
    { device, reportKey: reportKeyLine(key), ageRecipient: AGE, labels: {}, issuedAt: Date.UTC(2025, 0, 1) },
    ENROLL,
  );

describe('fleet status verifies what it shows', () => {
  it('a certificate in devices/ verifies notes and refs; one a device only publishes verifies its notes, and no gate counts its refs', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'keystone-fleet-verify-'));
    dirs.push(repo);
    await git(repo, 'init', '--quiet', '--initial-branch=main');
    mkdirSync(join(repo, 'devices'));
    writeFileSync(join(repo, 'devices', 'dev-a.cert'), cert('dev-a', A));
    await git(repo, 'add', '.');
    await git(repo, 'commit', '--quiet', '-m', 'enrol dev-a');
    const commit = (await git(repo, 'rev-parse', 'HEAD')).trim();
    const rollout = { wave: 'canary', state: 'success' as const, keep: [] };
    await new GitNotesReporter({ repository: repo, signer: reportSigner(A) }).deliver({
      ...status(commit, 'dev-a', 'success', 'applied'),
      rollout,
    });
    await new GitNotesReporter({ repository: repo, signer: reportSigner(B), certificate: cert('dev-b', B) }).deliver({
      ...status(commit, 'dev-b', 'success', 'applied'),
      rollout,
    });
    // dev-c: an earlier agent's way, unsigned and not enrolled.
    await new GitNotesReporter({ repository: repo }).deliver({
      ...status(commit, 'dev-c', 'success', 'applied'),
      rollout,
    });

    const gitdir = join(repo, '.git');
    const read = await readFleetReports(gitdir, commit);
    const refs = await readRolloutRefs(gitdir);
    const v = await verifyFleetReports(read.reports, refs, {
      gitdir,
      commit,
      enrollmentKeys: [ENROLL],
      now: Date.UTC(2025, 0, 3),
    });
    const verdict = (d: string) => read.reports.find((r) => r.device === d)!.onCommit!.verification;
    expect(v.requireEnrolled).toBe(true);
    expect(verdict('dev-a')).toMatchObject({ verdict: 'verified', certificate: 'devices/dev-a.cert' });
    expect(verdict('dev-b')).toMatchObject({
      verdict: 'verified',
      certificate: expect.stringContaining('dev-b publishes'),
    });
    expect(verdict('dev-c')).toMatchObject({ verdict: 'unverified' });
    expect(v.countedRefs.map((r) => r.device)).toEqual(['dev-a']);
    expect(v.refusedRefs.map((r) => [r.ref.device, r.verification.verdict]).sort()).toEqual([
      ['dev-b', 'verified'],
      ['dev-c', 'unverified'],
    ]);
    expect(v.warnings).toEqual([]);
  });
});
