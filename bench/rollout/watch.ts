// The rollout bench's view of the server: every device's notes ref and the rollout refs, read from the bare repository
// every ~200 ms until a condition holds (with a deadline).
import { parseRolloutRef } from '../../dist/report/rollout-refs.js';
import type { ProgramResult } from '../lib/run-program.js';
import { epochNow, fmt, sleep } from '../lib/stats.js';
import { devices } from './options.js';
import type { RolloutAgent } from './start-device.js';

type Git = (...args: string[]) => Promise<ProgramResult>;
type Notes = Map<string, { state: string; commit: string }>;
type RolloutRef = NonNullable<ReturnType<typeof parseRolloutRef>>;
/** A look at a sample: the notes, the rollout refs and when (epoch ms). */
type Sample<T> = (notes: Notes, refs: RolloutRef[], t: number) => T;

/** Readers of the server's refs, and waits on them; `agents` for what to say when one times out. */
export function watcher(git: Git, agents: () => RolloutAgent[]) {
  /** device → { state, commit } from the notes refs; and the rollout refs, parsed. */
  const readNotes = async (bare: string) => {
    const out = (
      await git('-C', bare, 'for-each-ref', '--format=%(refname) %(contents:subject)', 'refs/notes/keystone-devices/')
    ).stdout;
    const notes = new Map<string, { state: string; commit: string }>();
    for (const line of out.split('\n')) {
      const m = /^refs\/notes\/keystone-devices\/(\S+) keystone\/\S+: (\S+) ([0-9a-f]{40})$/.exec(line);
      if (m) notes.set(decodeURIComponent(m[1]!), { state: m[2]!, commit: m[3]! });
    }
    return notes;
  };
  const readRolloutRefs = async (bare: string) =>
    (await git('-C', bare, 'for-each-ref', '--format=%(refname)', 'refs/keystone-rollout/')).stdout
      .split('\n')
      .filter(Boolean)
      .map(parseRolloutRef)
      .filter((x): x is RolloutRef => Boolean(x));

  /**
   * Polls the bare repository every ~200 ms until `done(notes, refs, t)` says so (deadline); `each(notes, refs, t)`
   * sees every sample (to record first moments).
   */
  const watch = async (
    bare: string,
    { done, each, deadlineMs, what }: { done: Sample<boolean>; each?: Sample<void>; deadlineMs: number; what: string },
  ) => {
    const until = epochNow() + deadlineMs;
    for (;;) {
      const [notes, refs] = await Promise.all([readNotes(bare), readRolloutRefs(bare)]);
      const t = epochNow();
      each?.(notes, refs, t);
      if (done(notes, refs, t)) return;
      if (t > until) {
        const exited = agents()
          .filter((a) => a.exit)
          .map((a) => `${a.device}: ${a.stderr.slice(-300)}`);
        const summary = [...notes].map(([d, s]) => `${d}=${s.state}:${s.commit.slice(0, 7)}`).join(' ');
        throw new Error(
          `${what}: not done after ${fmt(deadlineMs)} ms (notes: ${summary})${exited.length ? `; exited: ${exited.join(' | ')}` : ''}`,
        );
      }
      await sleep(200);
    }
  };
  const waitAllState = (bare: string, sha: string, state: string, deadlineMs: number, what: string, list = devices) => {
    const seen = new Map<string, number>();
    return watch(bare, {
      each: (notes, _r, t) => {
        for (const d of list)
          if (!seen.has(d) && notes.get(d)?.commit === sha && notes.get(d)?.state === state) seen.set(d, t);
      },
      done: () => seen.size === list.length,
      deadlineMs,
      what,
    }).then(() => seen);
  };
  return { readNotes, readRolloutRefs, watch, waitAllState };
}
