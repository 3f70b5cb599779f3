// The fleet bench's printout: per N the variants side by side, enrolment on ÷ off, per-device cost at the largest N ÷ at
// the smallest, the fits against N, warnings.
import { cpus } from 'node:os';
import { machine } from '../lib/machine.js';
import { fmt, ratio } from '../lib/stats.js';
import { enrolments, modes, opts, pollMs, sizes } from './options.js';
import type { SizeResult, Variant } from './run-size.js';
import { pdb, timeRef, type OnOff, type Summary } from './summary.js';

type EnrolmentCommits = NonNullable<SizeResult['enrolmentCommits']>;

/** Prints the tables of the run. */
export function printFleet(
  variants: Variant[],
  byMode: Record<string, SizeResult[]>,
  summaries: Record<string, Summary>,
  onOff: Record<string, OnOff[]>,
): void {
  const vLabel = (v: Variant) =>
    enrolments.length > 1 ? `${v.mode === 'separate' ? 'sep' : 'same'}, enr ${v.enrolment}` : v.mode;
  console.log(
    `\nfleet benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}; one idle component, signed, ` +
      `--poll ${opts.poll} (±10 %), git-notes reports (every report signed by its device); N = ${sizes.join(', ')}, a fresh fleet and repository each; ` +
      `reports: ${modes.map((m) => (m === 'same' ? 'same (to the followed repository)' : 'separate (--status-repo reports-N.git)')).join(' and ')}; ` +
      `enrolment: ${enrolments.map((e) => (e === 'on' ? 'on (devices/ certificates, --enrollment-key)' : 'off (no devices/, no --enrollment-key)')).join(' and ')}`,
  );
  const L = 46;
  const W = 16;
  const s0 = summaries[variants[0]!.key]!;
  for (const n of sizes) {
    const rs = variants.map((v) => byMode[v.key]!.find((r) => r.n === n)!);
    const firsts = variants.map((v) => summaries[v.key]!.first);
    console.log(
      `\nN = ${n}  (all ${n} up and reporting the first commit after ${rs.map((r, i) => `${fmt(r.allUpMs! / 1000, 1)} s ${vLabel(variants[i]!)}`).join(', ')})`,
    );
    console.log(`${'measure'.padEnd(L)} ${variants.map((v) => vLabel(v).padStart(W)).join(' ')}  reference`);
    const row = (label: string, value: (r: SizeResult, first: SizeResult) => string, ref = '') =>
      console.log(`${label.padEnd(L)} ${rs.map((r, i) => value(r, firsts[i]!).padStart(W)).join(' ')}  ${ref}`);
    const all = (f: (r: SizeResult, first: SizeResult) => string) => rs.map((r, i) => f(r, firsts[i]!)).join(' / ');
    row(
      'no-op poll: requests / device / poll',
      (r) => fmt(r.quiet.noopPoll.requests, 2),
      `looks per device per interval ${all((r) => fmt(r.quiet.noopPoll.looksPerDevicePerInterval, 2))} (1)`,
    );
    row(
      'no-op poll: bytes out + in / device / poll',
      (r) => `${fmt(r.quiet.noopPoll.bytesOut)} + ${fmt(r.quiet.noopPoll.bytesIn)}`,
      `ls-refs answer ${all((r) => `${fmt(r.quiet.noopPoll.lsRefsResponseBytes)} B`)}; other requests in the window ${all((r) => String(r.quiet.noopPoll.otherRequestsInWindow))} (0)`,
    );
    row(
      'commit: requests / device',
      (r) => fmt(r.commit.perDevice.requests, 2),
      `look + fetch + reports: ${all((r) => `${fmt(r.commit.perDevice.look.requests, 0)} + ${fmt(r.commit.perDevice.fetch.requests, 2)} + ${fmt(r.commit.perDevice.report.requests, 2)}`)}`,
    );
    row(
      'commit: bytes out + in / device',
      (r) => fmt(r.commit.perDevice.bytes),
      `vs N = ${s0.first.n}: ${all((r, f) => ratio(r.commit.perDevice.bytes, f.commit.perDevice.bytes))}`,
    );
    row(
      '  of which look / fetch / reports',
      (r) =>
        `${fmt(pdb(r.commit.perDevice.look))}/${fmt(pdb(r.commit.perDevice.fetch))}/${fmt(pdb(r.commit.perDevice.report))}`,
      `reports vs N = ${s0.first.n}: ${all((r, f) => ratio(pdb(r.commit.perDevice.report), pdb(f.commit.perDevice.report)))}`,
    );
    row(
      '  the same without ref advertisements',
      (r) => fmt(r.commit.perDevice.bytesWithoutAdverts),
      `vs N = ${s0.first.n}: ${all((r, f) => ratio(r.commit.perDevice.bytesWithoutAdverts, f.commit.perDevice.bytesWithoutAdverts))}`,
    );
    row(
      'a report: one POST, bytes sent + answered',
      (r) => `${fmt(r.commit.perDevice.report.postBytesIn)} + ${fmt(r.commit.perDevice.report.postBytesOut)}`,
      `the note: ${all((r) => `${fmt(r.note.bytes)} B${r.note.signed ? ' signed' : ''}`)}`,
    );
    row(
      'receive-pack POSTs / device',
      (r) => fmt(r.commit.receivePackPostsPerDevice, 2),
      `2 (pending, success); extra POSTs ${all((r) => String(r.commit.collisions.extraPosts))}, non-200 ${all((r) => String(r.commit.collisions.non200))}, outbox retries ${all((r) => String(r.commit.collisions.outboxRetries))}`,
    );
    row(
      'advertisements asked: reports / looks',
      (r) => `${r.commit.reportAdverts} / ${r.commit.lookAdverts}`,
      `in the commit window (0 / 0: a report is one POST, a look one POST); in the quiet window, looks ${all((r) => String(r.quiet.noopPoll.lookGets))}`,
    );
    row(
      'advertisement: receive-pack info/refs',
      (r) => `${fmt(r.adverts.receivePackInfoRefs)} B`,
      `no longer asked by a report (only after a refused push); refs in the reports' repository ${all((r) => String(r.adverts.refsInReportsRepo))}`,
    );
    row(
      'advertisement: upload-pack v1 info/refs',
      (r) => `${fmt(r.adverts.uploadPackV1InfoRefs)} B`,
      `each fetch starts with it (isomorphic-git fetches in v1); refs in the followed repository ${all((r) => String(r.adverts.refsOnServer))}`,
    );
    row(
      'advertisement: upload-pack v2 info/refs',
      (r) => `${fmt(r.adverts.uploadPackV2InfoRefs)} B`,
      `an agent's first look only (capabilities only; ls-refs asks for refs/heads/main)`,
    );
    row(
      'start-up: requests / bytes per device',
      (r) => `${fmt(r.startup.perDevice.requests, 1)} / ${fmt(r.startup.perDevice.bytes)}`,
      "first look, first fetch, the first commit's reports",
    );
    if (rs.some((r) => r.enrolmentCommits)) {
      const e = (f: (x: EnrolmentCommits, r: SizeResult) => string) => (r: SizeResult) =>
        r.enrolmentCommits ? f(r.enrolmentCommits, r) : '—';
      const isOn = (r: SizeResult) => r.enrolment === 'on';
      // The same reports mode without enrolment, at this N: its README commit is the reference of the enrolment commit.
      const offOf = (r: SizeResult) => byMode[`${r.reports}/off`]?.find((x) => x.n === r.n);
      const vsOff = (r: SizeResult, pick: (x: EnrolmentCommits) => number | null) =>
        isOn(r) && offOf(r) ? ratio(pick(r.enrolmentCommits!), pick(offOf(r)!.enrolmentCommits!)) : '';
      row(
        'enrolment commit (off: README) fetch/device',
        e((x) => fmt(x.bulk.fetch.packBytes)),
        `pack, without the advertisement; on ÷ off ${all((r) => vsOff(r, (x) => x.bulk.fetch.packBytes) || '—')}; ${n} certificates, ${all(e((x, r) => (isOn(r) ? `${fmt((x.bulk.fetch.packBytes! - (offOf(r)?.enrolmentCommits!.bulk.fetch.packBytes ?? 0)) / n)} B more per certificate` : '—')))}`,
      );
      row(
        'one more (off: README) fetch/device',
        e((x) => fmt(x.single.fetch.packBytes)),
        `on ÷ off ${all((r) => vsOff(r, (x) => x.single.fetch.packBytes) || '—')}; one certificate (${all(e((x, r) => (isOn(r) ? `${fmt(x.single.certificateBytes)} B` : '—')))}), devices/ tree of ${n + 1} entries ${all(e((x, r) => (isOn(r) ? `${fmt(x.single.devicesTreeBytes)} B` : '—')))}`,
      );
      row(
        "a device's Git cache: start → → → end",
        (r) =>
          r.enrolmentCommits
            ? `${fmt(r.cachePackBytes.start! / 1000, 1)}→${fmt(r.enrolmentCommits.bulk.cachePackBytes! / 1000, 1)}→${fmt(r.enrolmentCommits.single.cachePackBytes! / 1000, 1)}→${fmt(r.cachePackBytes.end! / 1000, 1)}`
            : '—',
        "kB of packs in dev-001's <state-dir>/git: after the first commit, the two commits above, the measured commit",
      );
      row(
        '  those two commits: requests / device',
        e(
          (x) =>
            `${fmt(x.bulk.fetch.requests! + x.bulk.report.requests!, 2)}, ${fmt(x.single.fetch.requests! + x.single.report.requests!, 2)}`,
        ),
        'fetch + reports, beside the look (as any commit)',
      );
    }
    row(
      'push → device reported success, p50',
      (r) => `${fmt(r.commit.reportedMs.p50)} ms`,
      `P/2 + apply p50 = ${all((r) => `${fmt(pollMs / 2 + r.commit.applyMs.p50!)} ms`)}`,
    );
    row(
      'push → all reported (max)',
      (r) => `${fmt(r.commit.reportedMs.max)} ms`,
      `poll + apply (max) = ${all((r) => `${fmt(timeRef(r))} ms (${r.commit.reportedMs.max! >= timeRef(r) ? '+' : '−'}${fmt(Math.abs(r.commit.reportedMs.max! - timeRef(r)) / 1000, 1)} s)`)}; aim within +10 s`,
    );
    row(
      '  push → new revision (found), p50 / max',
      (r) => `${fmt(r.commit.newRevisionMs.p50)} / ${fmt(r.commit.newRevisionMs.max)}`,
      `apply p50 / max ${all((r) => `${fmt(r.commit.applyMs.p50)} / ${fmt(r.commit.applyMs.max)} ms`)}`,
    );
    row(
      '  applied → success note on the server, p50',
      (r) => `${fmt(r.commit.appliedToReportedMs.p50)} ms`,
      'two pushes: pending, success (one POST each)',
    );
    row(
      'CPU: fleet / server, during the commit',
      (r) => `${fmt(r.commit.cpu.fleetPercent, 0)} / ${fmt(r.commit.cpu.serverPercent, 0)} %`,
      `of ${cpus().length} cores; quiet: ${all((r) => `${fmt(r.quiet.cpu.fleetPercent, 0)} / ${fmt(r.quiet.cpu.serverPercent, 0)} %`)}`,
    );
    for (const [i, r] of rs.entries())
      if (r.commit.noopLooksInWindowBeyondOne > 0)
        console.log(
          `  (${vLabel(variants[i]!)}: ${r.commit.noopLooksInWindowBeyondOne} no-op looks in the commit window, not counted)`,
        );
  }
  if (enrolments.length === 2) {
    console.log(
      `\nper device, enrolment on ÷ off (the same N and reports mode, in the same run; aim ≤ 1.1 but for the enrolment commit itself):`,
    );
    const keys: [string, string][] = [
      ['no-op poll requests', 'noopPollRequests'],
      ['no-op poll bytes', 'noopPollBytes'],
      ['commit requests', 'commitRequests'],
      ['commit bytes', 'commitBytes'],
      ["  the look's bytes", 'lookBytes'],
      ["  the fetch's bytes", 'fetchBytes'],
      ["  the reports' bytes", 'reportBytes'],
      ['a note (one device, one commit)', 'noteBytes'],
      ['start-up bytes (first fetch, first reports)', 'startupBytes'],
    ];
    const cols = modes.flatMap((m) => sizes.map((n) => ({ m, n })));
    console.log(
      `${''.padEnd(L)} ${cols.map(({ m, n }) => `${m === 'separate' ? 'sep' : m} N=${n}`.padStart(12)).join(' ')}`,
    );
    for (const [label, k] of keys)
      console.log(
        `${label.padEnd(L)} ${cols.map(({ m, n }) => `×${fmt(onOff[m]!.find((x) => x.n === n)![k], 3)}`.padStart(12)).join(' ')}`,
      );
  }
  console.log(`\nper-device cost, N = ${s0.last.n} ÷ N = ${s0.first.n} (aim ≤ 1.1):`);
  console.log(`${''.padEnd(L)} ${variants.map((v) => vLabel(v).padStart(W)).join(' ')}`);
  const ratioRow = (label: string, key: string) =>
    console.log(
      `${label.padEnd(L)} ${variants.map((v) => `×${fmt(summaries[v.key]!.ratios[key], 3)}`.padStart(W)).join(' ')}`,
    );
  ratioRow('no-op poll requests', 'perDeviceNoopPollRequests');
  ratioRow('no-op poll bytes', 'perDeviceNoopPollBytes');
  ratioRow('commit requests', 'perDeviceCommitRequests');
  ratioRow('commit bytes', 'perDeviceCommitBytes');
  ratioRow("  the look's bytes", 'perDeviceCommitLookBytes');
  ratioRow("  the fetch's bytes", 'perDeviceCommitFetchBytes');
  ratioRow("  the reports' bytes", 'perDeviceCommitReportBytes');
  ratioRow('  commit bytes without advertisements', 'perDeviceCommitBytesWithoutAdverts');
  ratioRow('a note (one device, one commit)', 'noteBytes');
  console.log(
    `${'aim ≤ 1.1: commit / poll / reports'.padEnd(L)} ${variants.map((v) => `${summaries[v.key]!.aims.flatCommitCost ? 'met' : 'MISSED'} / ${summaries[v.key]!.aims.flatPollCost ? 'met' : 'MISSED'} / ${summaries[v.key]!.aims.flatReports ? 'met' : 'MISSED'}`.padStart(W)).join(' ')}`,
  );
  for (const v of variants) {
    const { fit, fitUp, last } = summaries[v.key]!;
    console.log(
      `${vLabel(v)}: advertisements against the devices: receive-pack ≈ ${fmt(fit.intercept)} + ${fmt(fit.slope, 1)} B per device (r² ${fmt(fit.r2, 4)}; no longer in a report), ` +
        `upload-pack v1 ≈ ${fmt(fitUp.intercept)} + ${fmt(fitUp.slope, 1)} B per device (each fetch); ` +
        `time to all reported at N = ${last.n}: ${fmt(last.commit.reportedMs.max)} ms against poll + apply ${fmt(timeRef(last))} ms ` +
        `(aim within 10 s: ${summaries[v.key]!.aims.allReportedWithin10sOfPollPlusApply ? 'met' : 'MISSED'})`,
    );
  }
  for (const v of variants) {
    const { enrolFit: ef, first, last } = summaries[v.key]!;
    if (!ef) continue;
    console.log(
      `${vLabel(v)}: the enrolment commit (all N certificates) fetched by each device ≈ ${fmt(ef.bulkPackPerDevice.intercept)} + ${fmt(ef.bulkPackPerDevice.slope, 1)} B per device enrolled ` +
        `(r² ${fmt(ef.bulkPackPerDevice.r2, 4)}; ×${fmt(last.enrolmentCommits!.bulk.fetch.packBytes! / first.enrolmentCommits!.bulk.fetch.packBytes!, 2)} from N = ${first.n} to ${last.n}: grows with the fleet, once per enrolment); ` +
        `one more enrolment ≈ ${fmt(ef.singlePackPerDevice.intercept)} + ${fmt(ef.singlePackPerDevice.slope, 1)} B per device already enrolled (r² ${fmt(ef.singlePackPerDevice.r2, 4)}), ` +
        `the devices/ tree ≈ ${fmt(ef.devicesTree.intercept)} + ${fmt(ef.devicesTree.slope, 1)} B per certificate`,
    );
  }
  for (const v of variants)
    for (const r of byMode[v.key]!) {
      if (r.commit.outcomes.some((o) => o !== 'all components running'))
        console.log(`warning: N = ${r.n} (${v.key}): outcomes ${r.commit.outcomes.join(', ')}`);
      for (const [w, { count, afterPush, example }] of Object.entries(r.warnings))
        console.log(
          `warning: N = ${r.n} (${v.key}): agents logged "${w}" ${count} time(s), ${afterPush} after the push${example ? `, e.g. ${example}` : ''}`,
        );
    }
}
