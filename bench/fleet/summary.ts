// The fleet bench's summary per variant (reports mode × enrolment): per-device cost at the largest N ÷ at the smallest,
// the aims, the fits against N, and enrolment on ÷ off at each N.
import { round } from '../lib/stats.js';
import { enrolments, modes, pollMs, sizes } from './options.js';
import { linearFit, type LinearFit } from './records.js';
import type { SizeResult, Variant } from './run-size.js';

export interface Summary {
  first: SizeResult;
  last: SizeResult;
  fit: LinearFit;
  fitUp: LinearFit;
  ratios: Record<string, number | null>;
  aims: Record<string, boolean>;
  enrolFit: { bulkPackPerDevice: LinearFit; singlePackPerDevice: LinearFit; devicesTree: LinearFit } | undefined;
}
export type OnOff = Record<string, number | null> & { n: number };

/** Push → all reported against: one poll interval + the slowest apply. */
export const timeRef = (r: SizeResult): number => pollMs + r.commit.applyMs.max!;
/** Bytes out + in. */
export const pdb = (pd: { bytesOut: number | null; bytesIn: number | null }): number => pd.bytesOut! + pd.bytesIn!;

/** Per variant: the first and last N, the fits against N, the ratios last ÷ first and the aims; enrolment on ÷ off. */
export function summarise(variants: Variant[], byMode: Record<string, SizeResult[]>) {
  const summaries: Record<string, Summary> = {};
  for (const { key } of variants) {
    const list = byMode[key]!;
    const first = list[0]!;
    const last = list[list.length - 1]!;
    // Against the devices (not the refs): the projection is in devices, and in mode separate the followed
    // repository's ref count does not move.
    const fit = linearFit(list.map((r) => [r.n, r.adverts.receivePackInfoRefs]));
    const fitUp = linearFit(list.map((r) => [r.n, r.adverts.uploadPackV1InfoRefs]));
    const ratios = {
      from: first.n,
      to: last.n,
      perDeviceCommitRequests: round(last.commit.perDevice.requests! / first.commit.perDevice.requests!, 3),
      perDeviceCommitBytes: round(last.commit.perDevice.bytes! / first.commit.perDevice.bytes!, 3),
      perDeviceCommitBytesWithoutAdverts: round(
        last.commit.perDevice.bytesWithoutAdverts! / first.commit.perDevice.bytesWithoutAdverts!,
        3,
      ),
      perDeviceCommitLookBytes: round(pdb(last.commit.perDevice.look) / pdb(first.commit.perDevice.look), 3),
      perDeviceCommitFetchBytes: round(pdb(last.commit.perDevice.fetch) / pdb(first.commit.perDevice.fetch), 3),
      perDeviceCommitReportBytes: round(pdb(last.commit.perDevice.report) / pdb(first.commit.perDevice.report), 3),
      perDeviceNoopPollRequests: round(last.quiet.noopPoll.requests! / first.quiet.noopPoll.requests!, 3),
      perDeviceNoopPollBytes: round(
        (last.quiet.noopPoll.bytesOut! + last.quiet.noopPoll.bytesIn!) /
          (first.quiet.noopPoll.bytesOut! + first.quiet.noopPoll.bytesIn!),
        3,
      ),
      noteBytes: round(last.note.bytes / first.note.bytes, 3),
    };
    const aims = {
      flatCommitCost: ratios.perDeviceCommitRequests! <= 1.1 && ratios.perDeviceCommitBytes! <= 1.1,
      flatPollCost: ratios.perDeviceNoopPollRequests! <= 1.1 && ratios.perDeviceNoopPollBytes! <= 1.1,
      flatReports: ratios.perDeviceCommitReportBytes! <= 1.1 && last.commit.receivePackPostsPerDevice! <= 2,
      allReportedWithin10sOfPollPlusApply: last.commit.reportedMs.max! - timeRef(last) <= 10_000,
    };
    // The enrolment commits against the devices: bytes of pack per device (the certificates of the whole fleet once;
    // then the devices/ tree rewritten for one more).
    const enrolFit =
      first.enrolmentCommits && !first.enrolmentCommits.readme
        ? {
            bulkPackPerDevice: linearFit(list.map((r) => [r.n, r.enrolmentCommits!.bulk.fetch.packBytes!])),
            singlePackPerDevice: linearFit(list.map((r) => [r.n, r.enrolmentCommits!.single.fetch.packBytes!])),
            devicesTree: linearFit(list.map((r) => [r.n, r.enrolmentCommits!.single.devicesTreeBytes!])),
          }
        : undefined;
    summaries[key] = { first, last, fit, fitUp, ratios, aims, enrolFit };
  }
  // Enrolment on ÷ off, per N and reports mode (both enrolments measured).
  const onOff: Record<string, OnOff[]> = {};
  if (enrolments.length === 2)
    for (const mode of modes)
      onOff[mode] = sizes.map((n) => {
        const off = byMode[`${mode}/off`]!.find((r) => r.n === n)!;
        const on = byMode[`${mode}/on`]!.find((r) => r.n === n)!;
        const q = (f: (r: SizeResult) => number) => round(f(on) / f(off), 3);
        return {
          n,
          noopPollRequests: q((r) => r.quiet.noopPoll.requests!),
          noopPollBytes: q((r) => r.quiet.noopPoll.bytesOut! + r.quiet.noopPoll.bytesIn!),
          commitRequests: q((r) => r.commit.perDevice.requests!),
          commitBytes: q((r) => r.commit.perDevice.bytes!),
          lookBytes: q((r) => pdb(r.commit.perDevice.look)),
          fetchBytes: q((r) => pdb(r.commit.perDevice.fetch)),
          reportBytes: q((r) => pdb(r.commit.perDevice.report)),
          noteBytes: q((r) => r.note.bytes),
          startupBytes: q((r) => r.startup.perDevice.bytes!),
        };
      });
  return { summaries, onOff };
}
