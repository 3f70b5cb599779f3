// The fleet bench's results file (bench/results/fleet.json).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { resultsHead } from '../lib/machine.js';
import { benchDir, ensureDir } from '../lib/paths.js';
import { round } from '../lib/stats.js';
import { enrolments, modes, opts, pollMs, quietPolls, sizes } from './options.js';
import type { SizeResult, Variant } from './run-size.js';
import type { OnOff, Summary } from './summary.js';

/** Writes the results file; its path. */
export function writeFleetResults(
  {
    variants,
    byMode,
    summaries,
    onOff,
  }: {
    variants: Variant[];
    byMode: Record<string, SizeResult[]>;
    summaries: Record<string, Summary>;
    onOff: Record<string, OnOff[]>;
  },
  {
    loadBefore,
    loadAfter,
    othersPercent,
    tStart,
  }: { loadBefore: number; loadAfter: number; othersPercent: number; tStart: number },
): string {
  const resultsFile = join(benchDir, 'results', 'fleet.json');
  const s0 = summaries[variants[0]!.key]!;
  const agentCommand =
    'keystone agent --repo http://127.0.0.1:PORT/fleet-N.git --ref main --plan plans/idle.toml --device dev-NNN ' +
    `--poll ${opts.poll} --state-dir FRESH --trusted-key K.pub --status git-notes --listen 127.0.0.1:PORT_i --log-format json --stop-on-exit`;
  ensureDir(join(benchDir, 'results'));
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        ...resultsHead('fleet', { loadBefore, loadAfter, othersPercent, withGit: true }),
        sizes,
        pollMs,
        quietPolls,
        reportsModes: modes,
        enrolments,
        commands: {
          same: agentCommand,
          separate: `${agentCommand.replace('fleet-N.git', 'fleet-N-sep.git')} --status-repo http://127.0.0.1:PORT/reports-N.git`,
          enrolmentOn:
            'before the first start: keystone identity --json --state-dir FRESH --device dev-NNN > dev-NNN.json; keystonectl enroll --key enroll.key ' +
            '--identity dev-NNN.json --out devices/dev-NNN.cert (committed after the fleet is up on the first commit, not re-signed); the agent as above ' +
            'with --enrollment-key enroll.pub (repositories fleet-N-enr.git, fleet-N-sep-enr.git, reports-N-enr.git)',
        },
        measure:
          'requests and bytes served by git http-backend (src/dev/git-http-server.ts records), split by kind: look = protocol v2 upload-pack ' +
          '(a poll: one ls-refs POST, counted by its POST), fetch = v1 upload-pack, report = receive-pack (one POST, no advertisement; and ' +
          'anything asked of a reports repository); a commit costs its fetches and ' +
          "reports plus one look per device. reportedMs: from `git push` returning to the bench seeing the device's success note on the bare " +
          'repository the reports go to (polled every ~200 ms). advertisementFit: bytes against the number of devices. enrolmentCommits (enrolment ' +
          "on): bulk = the commit adding every device's certificate, single = one certificate more; enrolment off: two commits of a README " +
          'line in their place (readme: true), the reference; fetch.packBytes = the fetch without its advertisement, per device. ' +
          'Enrolment off is not unsigned: this version signs every report whatever the flags.',
        references: {
          flat: `per-device cost at N = ${s0.last.n} ÷ at N = ${s0.first.n}, aim ≤ 1.1`,
          enrolment:
            'per device, enrolment on ÷ off at the same N and reports mode, same run; aim ≤ 1.1 (the enrolment commit itself apart)',
          timeToAllReported: 'one poll interval + the slowest apply, aim: the last report within 10 s of it',
        },
        enrolmentOnOff: onOff,
        byVariant: Object.fromEntries(
          variants.map((v) => [
            v.key,
            {
              reports: v.mode,
              enrolment: v.enrolment,
              ratios: summaries[v.key]!.ratios,
              aims: summaries[v.key]!.aims,
              advertisementFit: { receivePack: summaries[v.key]!.fit, uploadPackV1: summaries[v.key]!.fitUp },
              ...(summaries[v.key]!.enrolFit && { enrolmentFit: summaries[v.key]!.enrolFit }),
              bySize: byMode[v.key]!.map((r) => ({
                ...r,
                perDevice: r.perDevice.map((d) =>
                  Object.fromEntries(Object.entries(d).map(([k, x]) => [k, typeof x === 'number' ? round(x, 1) : x])),
                ),
              })),
            },
          ]),
        ),
        benchSeconds: round((performance.now() - tStart) / 1000, 1),
      },
      null,
      2,
    ) + '\n',
  );
  return resultsFile;
}
