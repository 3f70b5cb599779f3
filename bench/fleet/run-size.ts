// One fleet of the fleet bench (N agents, one variant: reports mode × enrolment): it comes up and reports the first commit,
// the two side commits (enrolment, or README lines), the quiet window of no-op polls, the ref advertisements, then one
// commit pushed and measured to every device's success note; what the server served meanwhile, by kind.
import { Buffer } from 'node:buffer';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { assertPortsFree } from '../lib/ports.js';
import { killStragglers } from '../lib/processes.js';
import { startAgent, type AgentEvent } from '../lib/start-agent.js';
import { ensureDir } from '../lib/paths.js';
import { epochNow, fmt, median, round, sleep } from '../lib/stats.js';
import { advertBytes, cachePackBytes, cpuMeter, waitForSuccess, type FleetAgent } from './fleet-helpers.js';
import { opts, pollMs, portBase, quietPolls } from './options.js';
import { kind, recordsOf, tally, windowCost } from './records.js';
import type { FleetContext } from './setup.js';

/** A variant: where the reports go × enrolment (its key: `mode/enrolment`). */
export interface Variant {
  key: string;
  mode: string;
  enrolment: string;
}

const isDone = (e: AgentEvent) =>
  e.msg === 'all components running' || e.msg === 'apply finished' || e.msg?.startsWith?.('apply failed');

/** A fresh fleet of `n` agents in `variant`, measured; stopped before it returns. */
export async function runSize(ctx: FleetContext, n: number, variant: Variant) {
  const { git, work, port, ws, keyPrefix, enrollPrefix, idle, commit, writeRecipe, pool, enrol, server } = ctx;
  const { mark, records } = server;
  /** Every device's `success` for `sha` delivered (its POST answered), so that nothing of it overlaps what comes next. */
  const allDelivered = (sha: string) =>
    Promise.all(
      ctx.agents.map((a) =>
        a.waitFor(
          (e) => e.msg === 'commit status delivered' && e.commit === sha && e.state === 'success',
          30_000,
          `${a.device}'s success delivery`,
        ),
      ),
    );
  const { mode, enrolment } = variant;
  const separate = mode === 'separate';
  const enrolled = enrolment === 'on';
  const name = `fleet-${n}${separate ? '-sep' : ''}${enrolled ? '-enr' : ''}`;
  const bare = join(work, 'srv', `${name}.git`);
  await git('init', '--quiet', '--bare', '--initial-branch=main', bare);
  await git('-C', bare, 'config', 'http.receivepack', 'true');
  // This fleet's work tree: a clone of the first commit.
  const wsF = join(work, `ws-${name}`);
  await git('clone', '--quiet', ws, wsF);
  await git('-C', wsF, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  const sha0 = (await git('-C', wsF, 'rev-parse', 'HEAD')).stdout.trim();
  const url = `http://127.0.0.1:${port}/${name}.git`;
  // Where the notes land: the followed repository, or an empty reports repository beside it.
  const reportsName = `reports-${n}${enrolled ? '-enr' : ''}`;
  const notesBare = separate ? join(work, 'srv', `${reportsName}.git`) : bare;
  const notesUrl = separate ? `http://127.0.0.1:${port}/${reportsName}.git` : url;
  if (separate) {
    await git('init', '--quiet', '--bare', '--initial-branch=main', notesBare);
    await git('-C', notesBare, 'config', 'http.receivepack', 'true');
  }
  const stateRoot = join(work, `state-${mode}-${enrolment}-${n}`);
  const devices = Array.from({ length: n }, (_, i) => `dev-${String(i + 1).padStart(3, '0')}`);
  const apiPorts = devices.map((_, i) => portBase + i);
  await assertPortsFree(apiPorts);

  // 0. with enrolment: every device's keys and certificate before its agent's first start (untimed).
  let enrolSetup:
    { ms: number | null; certificates: number; certificateBytes: { mean: number | null; max: number } } | undefined;
  if (enrolled) {
    process.stderr.write(`N = ${n}, reports ${mode}, enrolment on: enrolling ${n} devices… `);
    mkdirSync(stateRoot, { recursive: true });
    chmodSync(stateRoot, 0o755);
    ensureDir(join(wsF, 'devices'));
    const t0 = performance.now();
    const sizesOfCerts = await pool(devices, 3, (d) => enrol(d, join(stateRoot, d), wsF));
    enrolSetup = {
      ms: round(performance.now() - t0),
      certificates: n,
      certificateBytes: { mean: round(sizesOfCerts.reduce((x, y) => x + y, 0) / n), max: Math.max(...sizesOfCerts) },
    };
  }
  process.stderr.write(`N = ${n}, reports ${mode}, enrolment ${enrolment}: starting ${n} agents… `);

  // 1. the fleet comes up and reports the tip
  const m0 = await mark();
  const startedAt = epochNow();
  ctx.agents = devices.map((device, i) => {
    const a = startAgent({
      gitRepo: url,
      plan: 'plans/idle.toml',
      stateDir: join(stateRoot, device),
      trustArgs: [
        '--trusted-key',
        `${keyPrefix}.pub`,
        ...(enrolled ? ['--enrollment-key', `${enrollPrefix}.pub`] : []),
      ],
      extraArgs: [
        ...[
          '--ref',
          'main',
          '--device',
          device,
          '--poll',
          opts.poll,
          '--status',
          'git-notes',
          '--listen',
          `127.0.0.1:${apiPorts[i]}`,
        ],
        ...(separate ? ['--status-repo', notesUrl] : []),
      ],
    }) as FleetAgent;
    a.device = device;
    void a.exited.then((x) => (a.exit = x));
    return a;
  });
  const up = await waitForSuccess(
    git,
    ctx.agents,
    notesBare,
    devices,
    sha0,
    60_000 + 3_000 * n,
    `N = ${n} (${variant.key}), first commit`,
  );
  const allUpMs = Math.max(...up.seen.values()) - startedAt;
  // The last `success` push has updated the ref; wait for every agent to have logged its delivery (its POST
  // answered) so that no report of the first commit overlaps the next window.
  const delivered = (a: FleetAgent, sha: string, state: string) =>
    a.events.some((e) => e.msg === 'commit status delivered' && e.commit === sha && e.state === state);
  await allDelivered(sha0);
  const u1 = await mark();
  const cacheAtStart = cachePackBytes(join(stateRoot, devices[0]!));
  process.stderr.write(`all reported ${sha0.slice(0, 7)} after ${fmt(allUpMs / 1000, 1)} s; `);

  // 1'. with enrolment: the enrolment commit (devices/ with the N certificates, not re-signed), then one more
  // certificate (a device that does not run): each fetched by every device; measured on their own. Without: two
  // commits that change nothing a device reads (a line of README.md each, not re-signed) in their place, so that
  // both fleets have reported as many commits before the quiet window and the measured commit (a notes tree and
  // a fetch's `have` lines grow with the commits a device has reported), and as the reference for the first two.
  const measureSideCommit = async (message: string, certs: number) => {
    const sha = await commit(message, wsF, false);
    const devicesTree = enrolled
      ? Number((await git('-C', wsF, 'cat-file', '-s', 'HEAD:devices')).stdout.trim())
      : undefined;
    const e0 = await mark();
    const pushedAt = (await git('-C', wsF, 'push', '--quiet', bare, 'HEAD:refs/heads/main')).endedAt;
    const seen = await waitForSuccess(
      git,
      ctx.agents,
      notesBare,
      devices,
      sha,
      3 * pollMs + 60_000 + 1_000 * n,
      `N = ${n} (${variant.key}), ${message}`,
    );
    const e1 = await mark();
    await allDelivered(sha);
    const win = tally(await records(e0, e1));
    return {
      sha,
      ...(enrolled && {
        certificatesAdded: certs,
        certificatesInTree: (await git('-C', wsF, 'ls-tree', 'HEAD', 'devices/')).stdout.split('\n').filter(Boolean)
          .length,
        devicesTreeBytes: devicesTree,
      }),
      allReportedMs: round(Math.max(...seen.seen.values()) - pushedAt),
      // The first device's Git cache once it has the commit (a thin pack is completed before it is stored).
      cachePackBytes: cachePackBytes(join(stateRoot, devices[0]!)),
      ...windowCost(win, n),
      window: { requests: win.requests, bytesOut: win.bytesOut, bytesIn: win.bytesIn },
    };
  };
  type SideCommit = Awaited<ReturnType<typeof measureSideCommit>>;
  let enrolmentCommits:
    { bulk: SideCommit; single: SideCommit & { certificateBytes?: number }; readme?: boolean } | undefined;
  if (enrolled) {
    const bulk = await measureSideCommit(`enrol ${n} devices`, n);
    process.stderr.write(`enrolment commit: ${fmt(bulk.fetch.packBytes)} B of pack per device; `);
    const spareBytes = await enrol('dev-spare', join(work, `state-spare-${name}`), wsF);
    const single: SideCommit & { certificateBytes?: number } = await measureSideCommit('enrol one more device', 1);
    single.certificateBytes = spareBytes;
    process.stderr.write(`one more: ${fmt(single.fetch.packBytes)} B; `);
    enrolmentCommits = { bulk, single };
  } else {
    writeFileSync(join(wsF, 'README.md'), 'A benchmark fleet.\n');
    const bulk = await measureSideCommit('README', 0);
    writeFileSync(join(wsF, 'README.md'), 'A benchmark fleet.\nOne line more.\n');
    const single = await measureSideCommit('README: one line more', 0);
    process.stderr.write(
      `two README commits: ${fmt(bulk.fetch.packBytes)}, ${fmt(single.fetch.packBytes)} B of pack per device; `,
    );
    enrolmentCommits = { bulk, single, readme: true };
  }
  process.stderr.write(`quiet ${quietPolls} × ${opts.poll}… `);

  // 2. the quiet window: no-op polls only
  const q0 = await mark();
  const quietStart = epochNow();
  const cpu = cpuMeter(() => ctx.agents, server.pid!);
  await sleep(quietPolls * pollMs);
  const q1 = await mark();
  const quietMs = epochNow() - quietStart;
  const quietCpu = cpu();

  // 3. the ref advertisements at this N (outside both windows)
  const refsIn = async (b: string) =>
    (await git('-C', b, 'for-each-ref', '--format=%(refname)')).stdout.split('\n').filter(Boolean).length;
  const adverts = {
    // Refs in the followed repository, and in the repository the reports go to (the same one in mode same).
    refsOnServer: await refsIn(bare),
    refsInReportsRepo: await refsIn(notesBare),
    // The report push's advertisement is the reports repository's; the fetch's and the poll's, the followed one's.
    receivePackInfoRefs: await advertBytes(notesUrl, 'git-receive-pack', false),
    uploadPackV1InfoRefs: await advertBytes(url, 'git-upload-pack', false),
    uploadPackV2InfoRefs: await advertBytes(url, 'git-upload-pack', true),
  };

  // 4. one commit
  ctx.version++;
  writeRecipe(`1.0.${ctx.version}`, wsF);
  const sha1 = await commit(`idle 1.0.${ctx.version}`, wsF);
  cpu();
  const p0 = await mark();
  const push = await git('-C', wsF, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  const pushedAt = push.endedAt;
  process.stderr.write(`pushed ${sha1.slice(0, 7)}… `);
  const rep = await waitForSuccess(
    git,
    ctx.agents,
    notesBare,
    devices,
    sha1,
    3 * pollMs + 60_000 + 1_000 * n,
    `N = ${n} (${variant.key}), the pushed commit`,
  );
  const p1 = await mark();
  const commitCpu = cpu();
  await Promise.all(
    ctx.agents.map((a) =>
      a.waitFor(
        (e) => e.msg === 'commit status delivered' && e.commit === sha1 && e.state === 'success',
        30_000,
        `${a.device}'s success delivery`,
      ),
    ),
  );
  const lastReportMs = Math.max(...rep.seen.values()) - pushedAt;
  process.stderr.write(`all reported after ${fmt(lastReportMs / 1000, 1)} s\n`);

  const startup = tally(await records(m0, u1));
  const quiet = tally(await records(q0, q1));
  const commitRecs = await records(p0, p1);
  const win = tally(commitRecs);

  // Per device, from its own log: push → new revision (the look that found it), → reconcile plan, → done.
  const perDevice = ctx.agents.map((a) => {
    const at = (pred: (e: AgentEvent) => unknown) => a.events.find(pred)?.t;
    const newRev = at((e) => e.msg === 'new revision' && e.revision === sha1);
    const planIdx = a.events.findIndex((e) => e.msg === 'reconcile plan' && e.revision === sha1);
    const plan = planIdx >= 0 ? a.events[planIdx]!.t : undefined;
    const done = a.events.find((e, i) => i > planIdx && isDone(e));
    return {
      device: a.device,
      reportedMs: rep.seen.get(a.device)! - pushedAt,
      pendingSeenMs: rep.pendingSeen.has(a.device) ? rep.pendingSeen.get(a.device)! - pushedAt : undefined,
      newRevisionMs: newRev !== undefined ? newRev - pushedAt : undefined,
      applyMs: plan !== undefined && done ? done.t - plan : undefined,
      appliedMs: done ? done.t - pushedAt : undefined,
      outcome: done?.msg,
      deliveries: a.events.filter((e) => e.msg === 'commit status delivered' && e.commit === sha1).length,
      retries: a.events.filter((e) => e.msg === 'commit status not delivered; will retry' && e.commit === sha1).length,
      pendingDelivered: delivered(a, sha1, 'pending'),
    };
  });
  // Warnings and errors, counted by message and code (with one example of the error text).
  const warnings: Record<string, { count: number; afterPush: number; example: string }> = {};
  for (const e of ctx.agents.flatMap((a) => a.events.filter((x) => x.level >= 40))) {
    const key = `${e.msg}${e.code ? ` (${e.code})` : ''}`;
    warnings[key] ??= { count: 0, afterPush: 0, example: String(e.err ?? e.error ?? '').slice(0, 300) };
    warnings[key]!.count++;
    if (e.t >= pushedAt) warnings[key]!.afterPush++;
  }

  // Polls: a look is one POST (ls-refs; the capabilities GET only on an agent's first look): count looks by
  // their POST.
  const quietLooks = kind(quiet, 'look').posts;
  const noopPoll = {
    looks: quietLooks,
    looksPerDevicePerInterval: round(quietLooks / n / (quietMs / pollMs), 2),
    requests: round(quiet.requests / quietLooks, 2),
    bytesOut: round(quiet.bytesOut / quietLooks, 1),
    bytesIn: round(quiet.bytesIn / quietLooks, 1),
    lsRefsResponseBytes: median(recordsOf(await records(q0, q1), 'POST', 'look').map((r) => r.bytes)),
    otherRequestsInWindow: quiet.requests - kind(quiet, 'look').requests,
    // Discovery GETs among the looks (0: every look after an agent's first is the POST alone).
    lookGets: kind(quiet, 'look').adverts,
  };
  // The commit's own cost: its fetches and reports, plus one look per device (the one that found it).
  const fetchK = kind(win, 'fetch');
  const reportK = kind(win, 'report');
  const commitReq = fetchK.requests + reportK.requests + n * noopPoll.requests!;
  const commitOut = fetchK.bytesOut + reportK.bytesOut + n * noopPoll.bytesOut!;
  const commitIn = fetchK.bytesIn + reportK.bytesIn + n * noopPoll.bytesIn!;
  const deliveries = perDevice.reduce((s, d) => s + d.deliveries, 0);
  const reported = perDevice.map((d) => d.reportedMs);
  const applies = perDevice.map((d) => d.applyMs).filter(Number.isFinite) as number[];
  // What one device's note says about the commit (its entry: the state line, agent version and health, and the
  // signature line `  ~ <key id> <signature>`), as pushed: the blob a report adds, whatever the fleet.
  const noteText = (
    await git('-C', notesBare, 'notes', `--ref=refs/notes/keystone-devices/${devices[0]}`, 'show', sha1).catch(() => ({
      stdout: '',
    }))
  ).stdout;
  const r = {
    n,
    reports: mode,
    enrolment,
    allUpMs: round(allUpMs),
    ...(enrolSetup && { enrolSetup }),
    // The first device's Git cache (packs, bytes): after the first commit, and after the measured one.
    cachePackBytes: { start: cacheAtStart, end: cachePackBytes(join(stateRoot, devices[0]!)) },
    ...(enrolmentCommits && { enrolmentCommits }),
    note: {
      device: devices[0]!,
      bytes: Buffer.byteLength(noteText),
      lines: noteText.split('\n').filter(Boolean).length,
      signed: /^ {2}~ [0-9a-f]{16} \S+$/m.test(noteText),
      text: noteText.slice(0, 2000),
    },
    startup: {
      requests: startup.requests,
      bytesOut: startup.bytesOut,
      bytesIn: startup.bytesIn,
      perDevice: { requests: round(startup.requests / n, 1), bytes: round((startup.bytesOut + startup.bytesIn) / n) },
    },
    quiet: { ms: round(quietMs), ...quiet, noopPoll, cpu: quietCpu },
    adverts,
    commit: {
      sha: sha1,
      reportedMs: {
        p50: round(median(reported)),
        max: round(Math.max(...reported)),
        min: round(Math.min(...reported)),
      },
      newRevisionMs: {
        p50: round(median(perDevice.map((d) => d.newRevisionMs).filter(Number.isFinite) as number[])),
        max: round(Math.max(...(perDevice.map((d) => d.newRevisionMs).filter(Number.isFinite) as number[]))),
      },
      applyMs: { p50: round(median(applies)), max: round(Math.max(...applies)) },
      appliedMs: {
        p50: round(median(perDevice.map((d) => d.appliedMs).filter(Number.isFinite) as number[])),
        max: round(Math.max(...(perDevice.map((d) => d.appliedMs).filter(Number.isFinite) as number[]))),
      },
      // Applied (the agent's log) → the success note on the server: the two report pushes, pending then success.
      appliedToReportedMs: {
        p50: round(
          median(perDevice.filter((d) => Number.isFinite(d.appliedMs)).map((d) => d.reportedMs - d.appliedMs!)),
        ),
      },
      cpu: commitCpu,
      window: win,
      perDevice: {
        requests: round(commitReq / n, 2),
        bytesOut: round(commitOut / n),
        bytesIn: round(commitIn / n),
        bytes: round((commitOut + commitIn) / n),
        // The same without the ref advertisements of its fetch and reports (the part that grows with the refs).
        bytesWithoutAdverts: round((commitOut + commitIn - fetchK.advertBytes - reportK.advertBytes) / n),
        fetch: {
          requests: round(fetchK.requests / n, 2),
          bytesOut: round(fetchK.bytesOut / n),
          bytesIn: round(fetchK.bytesIn / n),
          advertBytes: round(fetchK.advertBytes / Math.max(1, fetchK.adverts)),
        },
        report: {
          requests: round(reportK.requests / n, 2),
          bytesOut: round(reportK.bytesOut / n),
          bytesIn: round(reportK.bytesIn / n),
          advertBytes: round(reportK.advertBytes / Math.max(1, reportK.adverts)),
          // One report is one POST: what it sends (the notes commit, its trees and blob) and what the server answers.
          postBytesIn: round(reportK.bytesIn / Math.max(1, reportK.posts)),
          postBytesOut: round(reportK.bytesOut / Math.max(1, reportK.posts)),
        },
        look: { requests: noopPoll.requests, bytesOut: noopPoll.bytesOut, bytesIn: noopPoll.bytesIn },
      },
      noopLooksInWindowBeyondOne: kind(win, 'look').posts - n,
      // Advertisements asked for in the window: a report's only after a refused push, a look's only on a first look.
      reportAdverts: reportK.adverts,
      lookAdverts: kind(win, 'look').adverts,
      receivePackPosts: reportK.posts,
      receivePackPostsPerDevice: round(reportK.posts / n, 2),
      statusesDelivered: deliveries,
      // A POST beyond one per delivered status is a push the server refused and the reporter redid (a collision).
      collisions: {
        extraPosts: reportK.posts - deliveries,
        non200: reportK.non200 + fetchK.non200,
        outboxRetries: perDevice.reduce((s, d) => s + d.retries, 0),
      },
      outcomes: [...new Set(perDevice.map((d) => d.outcome))],
    },
    perDevice,
    warnings,
  };

  // The fleet goes before the next N: SIGTERM (each stops its component), SIGKILL to its group after 15 s.
  // (Not killStragglers(work): the server's command line names the work directory too.)
  await Promise.all(ctx.agents.map((a) => a.stop(15_000)));
  await killStragglers(
    ctx.agents.map((a) => a.pid),
    stateRoot,
  );
  await killStragglers([], idle);
  ctx.agents = [];
  return r;
}

export type SizeResult = Awaited<ReturnType<typeof runSize>>;
