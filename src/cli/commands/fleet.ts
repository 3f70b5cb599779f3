// `keystonectl fleet status`: the fleet's reports for one commit, per target (SPEC §13), and per wave when the
// commit's fleet.toml has a `[rollout]` (SPEC §14). Read-only: it reads the devices' Git notes, their rollout refs and
// the commit's fleet.toml, and checks no signature (it changes nothing a device would run).
import { resolve } from 'node:path';
import { IdentityError } from '../../identity/identity-error.js';
import { verifyFleetReports } from '../../fleet-view/fleet-verify.js';
import { parseGitRepo } from '../../git/git-repo-location.js';
import { parseArgs } from 'node:util';
import { OperationError } from '../../core/errors.js';
import { formatDuration, parseDuration } from '../../core/duration.js';
import { agentSectionFor } from '../../core/agent-section.js';
import { FLEET_FILE, parseFleet } from '../../core/fleet.js';
import { rolloutOf, type Rollout } from '../../core/rollout.js';
import { buildRolloutView, refWaves } from '../../fleet-view/fleet-rollout-view.js';
import { buildFleetView } from '../../fleet-view/fleet-view.js';
import type { ViewTarget } from '../../fleet-view/fleet-view-input.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { renderDiagnosticsText } from '../render/diagnostics-text.js';
import { renderFleetStatusMarkdown } from '../render/fleet-status-markdown.js';
import { renderFleetStatusText } from '../render/fleet-status-text.js';
import { FLEET_HELP } from './fleet-help.js';
import { readEnrollmentKey } from './read-enrollment-key.js';

const isRemote = (repo: string) => /^https?:\/\//i.test(repo);

export async function fleet(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    io.stdout.write(FLEET_HELP + '\n');
    return EXIT.OK;
  }
  if (sub !== 'status')
    throw new UsageError(
      sub === undefined ? 'fleet needs a subcommand: status' : `unknown fleet subcommand "${sub}" (there is: status)`,
    );
  return fleetStatus(rest, io);
}

async function fleetStatus(argv: string[], io: CliIo): Promise<number> {
  // isomorphic-git and the agent's Git wiring cost ~100 ms to load: only for this command, not every keystonectl run.
  const [
    { openFleetRepository, openReportsRepository },
    { readFleetReports, UnknownRefError },
    { readRolloutRefs },
    { secretFrom },
  ] = await Promise.all([
    import('../../fleet-view/fleet-repository.js'),
    import('../../fleet-view/fleet-reports-read.js'),
    import('../../fleet-view/fleet-rollout-read.js'),
    import('../secret-file.js'),
  ]);
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      repo: { type: 'string' },
      reports: { type: 'string' },
      ref: { type: 'string' },
      commit: { type: 'string' },
      devices: { type: 'boolean', default: false },
      'silent-after': { type: 'string', default: '10m' },
      json: { type: 'boolean', default: false },
      format: { type: 'string', default: 'text' },
      'token-file': { type: 'string' },
      'cache-dir': { type: 'string' },
      depth: { type: 'string' },
      'enrollment-key': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(FLEET_HELP + '\n');
    return EXIT.OK;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.format !== 'text' && values.format !== 'markdown')
    throw new UsageError(`--format must be text or markdown, not "${values.format}"`);
  if (values.json && values.format !== 'text') throw new UsageError('--json and --format markdown exclude each other');
  const silentAfterMs = parseDuration(values['silent-after']);
  if (silentAfterMs === undefined)
    throw new UsageError(`--silent-after takes a duration such as 10m, not "${values['silent-after']}"`);
  const depth = values.depth === undefined ? undefined : Number(values.depth);
  if (depth !== undefined && (!/^\d+$/.test(values.depth!) || !Number.isSafeInteger(depth) || depth < 1))
    throw new UsageError(`--depth must be a whole number ≥ 1, not "${values.depth}"`);
  if (values.ref !== undefined && !/^[^\s~^:?*[\\]+$/.test(values.ref))
    throw new UsageError(`--ref takes a branch name, not "${values.ref}"`);
  const repo = values.repo !== undefined && isRemote(values.repo) ? values.repo : resolve(io.cwd, values.repo ?? '.');
  const remote = isRemote(repo);
  // As the agent: no credentials or query in a URL (they reach git's command line, shell history and logs).
  for (const [flag, url] of [
    ['--repo', repo],
    ['--reports', values.reports],
  ] as const)
    if (url !== undefined && isRemote(url))
      try {
        parseGitRepo(url);
      } catch (e) {
        throw new UsageError(`${flag}: ${(e as Error).message}`);
      }
  const anyRemote = remote || (values.reports !== undefined && isRemote(values.reports));
  if (!anyRemote && (values['token-file'] !== undefined || values['cache-dir'] !== undefined))
    throw new UsageError('--token-file and --cache-dir are for a remote (--repo URL, --reports URL)');
  if (!remote && depth !== undefined) throw new UsageError('--depth is for a remote (--repo URL)');
  const enrollmentKeys = (values['enrollment-key'] ?? []).map((f) => readEnrollmentKey(resolve(io.cwd, f)));
  const token = anyRemote
    ? secretFrom(values['token-file'] && resolve(io.cwd, values['token-file']), io.env.KEYSTONE_GIT_TOKEN, 'Git token')
    : undefined;

  const badInput = (code: string, message: string): number => {
    if (values.json) io.stdout.write(JSON.stringify({ error: { code, message } }, null, 2) + '\n');
    io.stderr.write(`keystonectl fleet status: ${message} [${code}]\n`);
    return EXIT.BAD_INPUT;
  };
  let opened;
  try {
    opened = await openFleetRepository({
      repo,
      ...(values.ref !== undefined && { ref: values.ref }),
      ...(values.commit !== undefined && { commit: values.commit }),
      ...(values['cache-dir'] !== undefined && { cacheDir: resolve(io.cwd, values['cache-dir']) }),
      ...(token !== undefined && { token }),
      ...(depth !== undefined && { depth }),
      env: io.env,
    });
  } catch (e) {
    if (e instanceof UnknownRefError) return badInput(e.code, e.message);
    if (e instanceof OperationError && e.code === 'KS_NOT_A_GIT_REPOSITORY') return badInput(e.code, e.message);
    if (e instanceof OperationError && values.json)
      io.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message } }, null, 2) + '\n');
    throw e;
  }
  let notesGitdir = opened.gitdir;
  if (values.reports !== undefined) {
    const reports = isRemote(values.reports) ? values.reports : resolve(io.cwd, values.reports);
    try {
      notesGitdir = await openReportsRepository({
        repo: reports,
        ...(values['cache-dir'] !== undefined && { cacheDir: resolve(io.cwd, values['cache-dir']) }),
        ...(token !== undefined && { token }),
        env: io.env,
      });
    } catch (e) {
      if (e instanceof OperationError && e.code === 'KS_NOT_A_GIT_REPOSITORY') return badInput(e.code, e.message);
      throw e;
    }
  }
  const read = await readFleetReports(opened.gitdir, opened.commit, notesGitdir);

  let targets: ViewTarget[] | undefined;
  let invalidFleet: unknown[] | undefined;
  let rollout: Rollout | undefined;
  if (read.fleetText !== undefined) {
    const parsed = parseFleet(FLEET_FILE, read.fleetText);
    if (!parsed.fleet) {
      // The very commit whose damage an operator must see: every device refused it. Warn, and group the devices by
      // the target they last reported instead of by the file.
      invalidFleet = parsed.diagnostics;
      io.stderr.write(
        renderDiagnosticsText(`${FLEET_FILE} at ${opened.commit.slice(0, 12)}`, parsed.diagnostics).replace(
          /; nothing was changed\n/,
          '; its devices are grouped by the targets they reported\n',
        ),
      );
      targets = [];
    } else {
      const fleetFile = parsed.fleet;
      // The agent version each target's devices are to run (SPEC §17): its own [agent], else the fleet's.
      targets = fleetFile.targets.map((t) => {
        const agent = agentSectionFor(fleetFile, t);
        return {
          name: t.name,
          plan: t.plan,
          ...(t.devices && { devices: t.devices }),
          ...(agent && { agentVersion: agent.version }),
        };
      });
      if (parsed.fleet.rollout) rollout = rolloutOf(parsed.fleet.rollout);
    }
  }
  const now = nowMs(io);
  // Only with a [rollout]: a fleet without one keeps its view (and its JSON) as it was. The refs come from where the
  // notes do; the remote's arrived with them, in the one fetch.
  const allRefs = rollout ? await readRolloutRefs(notesGitdir, io.env) : undefined;
  // Every report checked as the gates check theirs (SPEC §15); the rollout counts only what they count.
  let verified;
  try {
    verified = await verifyFleetReports(read.reports, allRefs ?? [], {
      gitdir: opened.gitdir,
      commit: opened.commit,
      enrollmentKeys,
      now,
      ...(rollout && { rollout }),
    });
  } catch (e) {
    if (e instanceof IdentityError) return badInput(e.code, e.message);
    throw e;
  }
  for (const w of verified.warnings) io.stderr.write(`keystonectl fleet status: warning: ${w}\n`);
  const refs = allRefs && verified.countedRefs;
  const notCounted = verified.refusedRefs
    .filter((r) => r.ref.commit === opened.commit)
    .map(({ ref, verification: v }) => ({
      device: ref.device,
      wave: ref.wave,
      state: ref.state,
      verdict: v.verdict,
      ...(v.reason !== undefined && { reason: v.reason }),
    }));
  const built =
    rollout &&
    refs &&
    buildRolloutView({ commit: opened.commit, commitTime: read.commitTime, rollout, refs, reports: read.reports, now });
  const rolloutView = built && {
    ...built,
    requireEnrolled: verified.requireEnrolled,
    ...(notCounted.length > 0 && { notCounted }),
  };
  // Reports were checked against something: an enrolment key given, or a fleet that requires enrolment. Otherwise
  // every report is unverified and the view keeps the shape it had before device identity (no report verdicts).
  if (!enrollmentKeys.length && !verified.requireEnrolled)
    for (const r of read.reports) for (const x of [r.onCommit, r.newest]) if (x) delete x.verification;
  const view = buildFleetView({
    commit: opened.commit,
    commitTime: read.commitTime,
    ...(targets && { targets }),
    reports: read.reports,
    now,
    silentAfterMs,
    ancestry: read.ancestry,
    ...(allRefs && { waves: refWaves(allRefs, opened.commit) }),
    ...(rollout && { waveOrder: rollout.waves.map((w) => w.name) }),
  });
  const meta = { label: opened.label, silentAfter: values['silent-after'] };
  if (values.json) {
    const {
      commit,
      fleetFile,
      silentSince,
      silenceCounts,
      targets: groups,
      devices,
      agentVersions,
      agentUpdate,
    } = view;
    io.stdout.write(
      JSON.stringify(
        {
          commit,
          ref: opened.label,
          fleetFile,
          ...(invalidFleet && { fleetFileErrors: invalidFleet }),
          silentAfter: formatDuration(silentAfterMs),
          silentSince,
          silenceCounts,
          targets: groups,
          devices,
          agentVersions,
          ...(agentUpdate && { agentUpdate }),
          ...(rolloutView && { rollout: rolloutView }),
        },
        null,
        2,
      ) + '\n',
    );
  } else if (values.format === 'markdown') io.stdout.write(renderFleetStatusMarkdown(view, meta, rolloutView));
  else
    io.stdout.write(
      renderFleetStatusText(view, meta, { devices: values.devices, ...(rolloutView && { rollout: rolloutView }) }),
    );
  return EXIT.OK;
}
