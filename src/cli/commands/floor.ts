// `keystone floor`: shows, and on request lowers, the replay floor of SPEC §6 (the greatest signing time this device
// has applied). A signature dated in the future that was applied before Keystone refused such signatures raises the
// floor above every honest signature to come; only the device's owner can lower it again, here, on the device: it
// is a command on the state database (root's, mode 0600), never an API call, and it refuses while an agent has the
// database open.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { lockStateDir, type StateDirLock } from '../../agent/state-dir-lock.js';
import { StateDirError } from '../../state-dir/safe-path.js';
import { STATE_DB_FILE } from '../../state-dir/layout.js';
import { openStateStore, StateStoreError, type StateStore } from '../../store/state-store.js';
import { DEFAULT_MAX_CLOCK_SKEW_SECONDS } from '../../trust/verify-revision.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { isoTime } from '../../core/iso-time.js';

export const FLOOR_USAGE = 'keystone floor [--state-dir /var/lib/keystone] [--reset [--to ISO-TIME]] [--json]';

/** A device clock before this (2020-01-01) was never set: lowering the floor to it would allow every replay. */
const UNSET_CLOCK_BEFORE_MS = Date.UTC(2020, 0, 1);

interface FloorView {
  stateDir: string;
  /** The replay floor (seconds), absent when nothing signed was ever applied. */
  floor?: number;
  floorIso?: string;
  /** The revision applied last, and its signing time. */
  revision?: { id: string; signedAt?: number; signedAtIso?: string; appliedAt: string };
  deviceTime: string;
  /** True when the floor is later than the device's clock plus the default skew: honest signatures are refused. */
  inFuture: boolean;
}

export async function floorCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'state-dir': { type: 'string', default: '/var/lib/keystone' },
      reset: { type: 'boolean', default: false },
      to: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.to !== undefined && !values.reset) throw new UsageError('--to goes with --reset');
  const now = nowMs(io);
  const to = values.reset ? resetTarget(values.to, now) : undefined;
  const stateDir = resolve(io.cwd, values['state-dir']);
  // Never create a state database: a mistyped --state-dir is an error, not an empty device.
  if (!existsSync(join(stateDir, STATE_DB_FILE)))
    throw new UsageError(`no state database at ${join(stateDir, STATE_DB_FILE)}: give the agent's --state-dir`);

  // A reset holds the agent's own lock (no agent starts meanwhile; a running one is named) and opens the store
  // exclusively as well (a store held by anything else fails at once): an agent would apply on its own floor.
  let lock: StateDirLock | undefined;
  if (values.reset) {
    try {
      lock = lockStateDir(stateDir);
    } catch (e) {
      if (!(e instanceof StateDirError) || e.code !== 'KS_STATE_DIR_LOCKED') throw e;
      io.stderr.write(
        `keystone floor: ${e.message}; the replay floor is changed only while no agent runs on ${stateDir} [${e.code}]\n`,
      );
      return EXIT.FAILED;
    }
  }
  let store: StateStore;
  try {
    store = openStateStore(stateDir, { exclusive: values.reset });
  } catch (e) {
    lock?.release();
    if (e instanceof StateStoreError && e.code === 'KS_STATE_BUSY') {
      io.stderr.write(
        `keystone floor: ${e.message}; the replay floor is changed only while no agent runs on ${stateDir} [${e.code}]\n`,
      );
      return EXIT.FAILED;
    }
    throw e;
  }
  try {
    const before = view(store, stateDir, now);
    if (to === undefined) {
      io.stdout.write(values.json ? `${JSON.stringify(before)}\n` : describe(before));
      return EXIT.OK;
    }
    const lowered = store.lowerReplayFloor(to);
    const after = view(store, stateDir, now);
    if (values.json) io.stdout.write(`${JSON.stringify({ ...after, lowered, previousFloor: before.floor ?? null })}\n`);
    else if (!lowered)
      io.stdout.write(
        before.floor === undefined
          ? 'no replay floor: nothing signed was applied yet; nothing changed\n'
          : `the replay floor (${before.floorIso}) is not after ${iso(to)}: nothing changed (this command only lowers it)\n`,
      );
    else
      io.stdout.write(
        `replay floor lowered from ${before.floorIso} to ${iso(to)}\n` +
          `a revision signed before ${iso(to)} is still refused as a replay: sign the revision to apply again if it is older, then start the agent\n`,
      );
    return EXIT.OK;
  } finally {
    store.close();
    lock?.release();
  }
}

/** `--to` (default: the device's clock), in whole seconds; never in the future, never from a clock that was never set. */
function resetTarget(text: string | undefined, nowMsValue: number): number {
  if (text === undefined) {
    if (nowMsValue < UNSET_CLOCK_BEFORE_MS)
      throw new UsageError(
        `this device's clock says ${isoTime(nowMsValue)}, which looks unset: set the clock first, or give --to ISO-TIME`,
      );
    return Math.floor(nowMsValue / 1000);
  }
  // A date with a time and a zone, so that the floor does not depend on the shell's time zone.
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ||
    Number.isNaN(Date.parse(text))
  )
    throw new UsageError(`--to takes an ISO 8601 time with a zone, such as 2026-05-01T12:00:00Z, not "${text}"`);
  const ms = Date.parse(text);
  if (ms < 0) throw new UsageError(`--to ${text} is before 1970`);
  if (ms > nowMsValue)
    throw new UsageError(
      `--to ${text} is later than this device's clock (${isoTime(nowMsValue)}): a floor in the future refuses every honest signature`,
    );
  return Math.floor(ms / 1000);
}

function view(store: StateStore, stateDir: string, now: number): FloorView {
  const floor = store.lastSignedAt();
  const rev = store.appliedRevision();
  return {
    stateDir,
    ...(floor !== undefined && { floor, floorIso: iso(floor) }),
    ...(rev && {
      revision: {
        id: rev.id,
        ...(rev.signedAt !== undefined && { signedAt: rev.signedAt, signedAtIso: iso(rev.signedAt) }),
        appliedAt: isoTime(rev.appliedAt),
      },
    }),
    deviceTime: isoTime(now),
    inFuture: floor !== undefined && floor * 1000 > now + DEFAULT_MAX_CLOCK_SKEW_SECONDS * 1000,
  };
}

function describe(v: FloorView): string {
  const lines = [
    `replay floor: ${v.floorIso ?? 'none (nothing signed was applied yet)'}`,
    `applied revision: ${v.revision ? `${v.revision.id}, signed at ${v.revision.signedAtIso ?? '(unsigned)'}, applied at ${v.revision.appliedAt}` : 'none'}`,
    `device clock: ${v.deviceTime}`,
  ];
  if (v.inFuture)
    lines.push(
      "the floor is later than this device's clock: every revision signed before it is refused as a replay.",
      "If the device's clock is right, stop the agent and run: keystone floor --reset [--to ISO-TIME]; if it is wrong, set the clock instead.",
    );
  return lines.join('\n') + '\n';
}

function iso(seconds: number): string {
  const d = new Date(seconds * 1000);
  return Number.isNaN(d.getTime()) ? `${seconds} s after 1970` : isoTime(d.getTime());
}
