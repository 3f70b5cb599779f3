// The rollout bench's printout: the two fleets side by side against their floors, the synthetic reads, warnings.
import { cpus } from 'node:os';
import { machine } from '../lib/machine.js';
import { fmt, ratio } from '../lib/stats.js';
import { abortPercent, bakeMs, gitReaderUpTo, members, minSuccess, n, opts, pollMs, WAVES } from './options.js';
import type { FleetResult } from './run-fleet.js';
import type { SyntheticSize, Variant } from './synthetic.js';

/** Prints the tables of the run (with [rollout], the good commit's floor goes into its results). */
export function printRollout(results: { fleets: Record<string, FleetResult> }, synthetic: SyntheticSize[]): void {
  const R = results.fleets.rollout;
  const P = results.fleets.plain;
  console.log(
    `\nrollout benchmark — node ${process.version}, ${cpus().length} × ${machine().cpu.model ?? 'cpu'}; N = ${n} real agents, --poll ${opts.poll} (±10 %), ` +
      `one idle component, signed, git-notes reports to the followed repository`,
  );
  console.log(
    `[rollout] waves canary 10, early 40, everyone 100 (by name hash): ${WAVES.map((w) => `${w.name} ${members[w.name]!.length}`).join(', ')} devices; bake ${opts.bake}, min_success ${minSuccess}, abort_failure_percent ${abortPercent}`,
  );
  const L = 52;
  const W = 18;
  const row = (label: string, a: unknown, b: unknown, ref = '') =>
    console.log(`${label.padEnd(L)} ${String(a).padStart(W)} ${String(b).padStart(W)}  ${ref}`);
  const s = (ms: number | null | undefined) => (Number.isFinite(ms) ? `${fmt(ms! / 1000, 1)} s` : '—');
  console.log(`\n${'measure'.padEnd(L)} ${'with [rollout]'.padStart(W)} ${'without'.padStart(W)}  reference`);
  if (R || P) {
    const floorR = R ? pollMs + R.good!.applyMs.max! + 2 * bakeMs : NaN;
    const floorP = P ? pollMs + P.good!.applyMs.max! : NaN;
    if (R) R.good!.floorMs = floorR;
    if (P) P.good!.floorMs = floorP;
    row(
      'fleet up on the first commit (untimed warm-up)',
      s(R?.allUpMs),
      s(P?.allUpMs),
      R ? 'with [rollout] it walks the waves too' : '',
    );
    row(
      '(a) good commit: push → all reported success',
      s(R?.good!.allReportedMs),
      s(P?.good!.allReportedMs),
      `ratio ${ratio(R?.good!.allReportedMs, P?.good!.allReportedMs)}`,
    );
    row(
      '    floor: poll + slowest apply (+ two bakes)',
      s(floorR),
      s(floorP),
      `÷ floor: ${ratio(R?.good!.allReportedMs, floorR)} / ${ratio(P?.good!.allReportedMs, floorP)}`,
    );
    row('    push → device reported, p50', s(R?.good!.reportedP50Ms), s(P?.good!.reportedP50Ms), '');
    row(
      '    apply p50 / max',
      R ? `${fmt(R.good!.applyMs.p50)} / ${fmt(R.good!.applyMs.max)} ms` : '—',
      P ? `${fmt(P.good!.applyMs.p50)} / ${fmt(P.good!.applyMs.max)} ms` : '—',
      '',
    );
    row(
      '    requests / device, push → all reported',
      R ? fmt(R.good!.window.perDevice, 1) : '—',
      P ? fmt(P.good!.window.perDevice, 1) : '—',
      R && P ? `the longer window polls more: ${ratio(R.good!.window.perDevice, P.good!.window.perDevice)}` : '',
    );
    if (R)
      for (const w of R.good!.byWave!)
        row(
          `    ${w.wave} (${w.devices}): gate open / reported, max`,
          `${s(w.gateOpenMs.max)} / ${s(w.reportedMs.max)}`,
          '',
          w.wave === WAVES[0]!.name ? 'goes first' : `held first: ${w.heldDevices} of ${w.devices}`,
        );
    row(
      "    a fetch's advertisement (v1), after (a)",
      R ? `${fmt(R.advertisement!.uploadPackV1Bytes)} B` : '—',
      P ? `${fmt(P.advertisement!.uploadPackV1Bytes)} B` : '—',
      R
        ? `refs in the followed repository: ${R.advertisement!.refs} (${R.advertisement!.notesRefs} notes, ${R.advertisement!.rolloutRefs} rollout) / ${P?.advertisement!.refs ?? '—'}`
        : '',
    );
    row(
      '(b) bad commit: devices that applied it',
      R ? `${R.bad!.applied} of ${n}` : '—',
      P ? `${P.bad!.applied} of ${n}` : '—',
      R
        ? `aim: the canary only (${members.canary!.length}); by wave ${Object.entries(R.bad!.appliedByWave)
            .map(([w, c]) => `${w} ${c}`)
            .join(', ')}; gate opened after the halt was visible: ${R.bad!.appliedAfterHalt.length}`
        : '',
    );
    row(
      '    push → halt visible (a wave past abort %)',
      s(R?.bad!.haltVisibleMs),
      '',
      R ? `fleet status --json rollout.halted: ${JSON.stringify(R.bad!.fleetStatusHalted)}` : '',
    );
    row(
      '    push → all outside the canary reported halt',
      s(R?.bad!.allHaltReportedMs),
      '',
      R
        ? `poll + failed apply (max ${fmt(R.bad!.applyMs.max)} ms) + poll = ${s(2 * pollMs + R.bad!.applyMs.max!)}: ${ratio(R.bad!.allHaltReportedMs, 2 * pollMs + R.bad!.applyMs.max!)}`
        : '',
    );
    row(
      '    push → all failure reports',
      '',
      s(P?.bad!.allFailureReportedMs),
      P ? `${P.bad!.failureReports} failure reports; poll + failed apply = ${s(pollMs + P.bad!.applyMs.max!)}` : '',
    );
    if (R?.held) {
      const x = R.held!.perDevicePerPoll;
      row(
        '(c) held at a gate: requests / device / poll',
        fmt(x.requests, 2),
        '',
        `aim ≤ 2: ${x.requests! <= 2.05 ? 'met' : 'MISSED'}; looks ${fmt(x.looks, 2)} + gate reads ${fmt(x.gateReads, 2)}; GETs ${R.held!.gets}`,
      );
      row(
        '    bytes out + in / device / poll',
        `${fmt(x.bytesOut)} + ${fmt(x.bytesIn)}`,
        '',
        `a look ${fmt(x.lookBytes)} B, a gate read ${fmt(x.gateReadBytes)} B (${R.held!.devices} held devices, ${fmt(R.held!.polls, 1)} polls, ${R.held!.stillHeldAtEnd} still held at the end)`,
      );
    }
  }
  if (synthetic.length) {
    console.log(
      `\n(c') one gate decision as a device of the last wave makes it (RolloutGate + refListerFor, over the same server), four times from a fresh start, ` +
        `the same seeded bucket sample for each variant; aim ~100 KB per read; signed: each ref name carries its device's signature and is counted once it ` +
        `verifies against devices/<name>.cert (report-admission.ts; one admission per held commit, reused by every read); ms = the listing alone, ` +
        `decision = listing + parsing + verification + the gate`,
    );
    console.log(
      `${'devices'.padStart(9)} ${'variant'.padEnd(10)} ${'read'.padEnd(4)} ${'sampled'.padEnd(7)} ${'refs read'.padStart(9)} ${'req'.padStart(3)} ${'bytes received'.padStart(14)} ${'÷ 100 KB'.padStart(8)} ${'÷ unsigned'.padStart(10)} ${'ms'.padStart(6)} ${'decision ms'.padStart(11)} ${'÷ unsigned'.padStart(10)} ${'verified'.padStart(8)}  decision`,
    );
    const short = (v: Variant) => (v.reader ? `signed/${v.reader}` : v.variant);
    for (const x of synthetic)
      for (const v of x.variants)
        for (const rd of v.reads) {
          const u = x.variants[0]!.reads[rd.read - 1];
          console.log(
            `${fmt(x.devices).padStart(9)} ${short(v).padEnd(10)} ${String(rd.read).padEnd(4)} ${String(rd.sampled ?? '—').padEnd(7)} ${(rd.error ? '—' : fmt(rd.refs)).padStart(9)} ${String(rd.serverRequests).padStart(3)} ${fmt(rd.serverBytesOut).padStart(14)} ${ratio(rd.serverBytesOut, 100_000).padStart(8)} ${(v === x.variants[0] ? '' : ratio(rd.serverBytesOut, u?.serverBytesOut)).padStart(10)} ${fmt(rd.ms).padStart(6)} ${fmt(rd.decideMs).padStart(11)} ${(v === x.variants[0] ? '' : ratio(rd.decideMs, u?.decideMs)).padStart(10)} ${(rd.verify ? `${rd.verify.counted}/${rd.verify.counted + rd.verify.refused}` : '').padStart(8)}  ${rd.decision}`,
          );
        }
    // The sampled read of each size once sized: the last.
    const sampledOf = (x: SyntheticSize) => x.reads.filter((rd) => !rd.error && rd.sampled).pop();
    const withSample = synthetic.filter(sampledOf);
    if (withSample.length > 1) {
      const a = withSample[0]!;
      const b = withSample[withSample.length - 1]!;
      console.log(
        `sampled read (unsigned), ${fmt(b.devices)} ÷ ${fmt(a.devices)} devices: requests ${ratio(sampledOf(b)!.serverRequests, sampledOf(a)!.serverRequests)}, ` +
          `bytes ${ratio(sampledOf(b)!.serverBytesOut, sampledOf(a)!.serverBytesOut)} (the fleet ×${fmt(b.devices / a.devices)})`,
      );
    }
    // Signed + verified ÷ unsigned: the last read each variant made (sized, when it made four), aim ≤ 2 for the decision.
    if (synthetic.some((x) => x.variants.length > 1)) {
      console.log(`\nsigned + verified ÷ unsigned, the last read of each (aim: the decision within ×2):`);
      for (const x of synthetic)
        for (const v of x.variants.slice(1)) {
          const rd = v.reads[v.reads.length - 1]!;
          const u = x.variants[0]!.reads[rd.read - 1]!;
          const verify = rd.verify
            ? `${rd.verify.counted} of ${rd.verify.counted + rd.verify.refused} reports verified${rd.verify.refused ? ` (refused: ${JSON.stringify(rd.verify.verdicts)})` : ''}, admission ${fmt(rd.verify.ms)} ms`
            : '';
          console.log(
            `${fmt(x.devices).padStart(9)} ${short(v).padEnd(10)} read ${rd.read}: bytes ${fmt(rd.serverBytesOut)} / ${fmt(u.serverBytesOut)} = ${ratio(rd.serverBytesOut, u.serverBytesOut)}; ` +
              `listing ${fmt(rd.ms)} / ${fmt(u.ms)} ms = ${ratio(rd.ms, u.ms)}; decision ${fmt(rd.decideMs)} / ${fmt(u.decideMs)} ms = ${ratio(rd.decideMs, u.decideMs)} ` +
              `(aim ×2: ${rd.decideMs! <= 2 * u.decideMs! ? 'met' : 'MISSED'}); ${verify}${v.packBytes ? `; devices/ pack ${fmt(v.packBytes)} B, tree ${fmt(v.devicesTreeBytes)} B` : ''}`,
          );
        }
      for (const x of synthetic)
        if (x.variants.some((v) => v.reader === 'git' && v.reads.length === 1))
          console.log(`${fmt(x.devices)} devices, signed/git: one read only (--git-reader-up-to ${gitReaderUpTo})`);
    }
    for (const x of synthetic)
      if (x.reads[0]!.error) console.log(`${fmt(x.devices)} devices: the first read failed (${x.reads[0]!.error})`);
  }
  for (const [kind, f] of Object.entries(results.fleets))
    for (const [w, { count, example }] of Object.entries(f.warnings!))
      if (!w.startsWith("cannot list this agent's containers"))
        console.log(`warning: ${kind}: agents logged "${w}" ${count} time(s)${example ? `, e.g. ${example}` : ''}`);
}
