// Which status last wrote this device's rollout refs: its seq, kept in the notes cache, so that a retried older status
// never undoes a newer one's rollout refs. Apart from git-notes-reporter.ts because it is one guard with a file of its
// own, which the reporter only asks (current) and tells (wroteRollout).
import * as fs from 'node:fs';
import { join } from 'node:path';
import type { CommitStatus } from './commit-status.js';

/** In the notes cache: the seq of the newest status whose rollout refs were pushed (see current()). */
const ROLLOUT_SEQ_FILE = 'keystone-rollout-seq';

export class RolloutSeq {
  /** The seq of the newest status whose rollout refs were written (persisted in the cache for a remote). */
  private rolloutSeq?: number;

  /**
   * The status as far as this reporter acts on it: without its rollout part when a newer status (a higher seq) has
   * written this device's rollout refs already. The outbox retries per commit, so a `held` of an older commit can
   * arrive after the newer commit's `success`: written then, it would bring back a ref the device has moved past
   * and delete the success other devices' gates count.
   */
  async current(s: CommitStatus, cacheDir: string | undefined): Promise<CommitStatus> {
    if (!s.rollout || s.seq === undefined) return s;
    if (this.rolloutSeq === undefined && cacheDir !== undefined) {
      const text = await fs.promises.readFile(join(cacheDir, ROLLOUT_SEQ_FILE), 'utf8').catch(() => '');
      if (/^\d+\n?$/.test(text)) this.rolloutSeq = Number(text);
    }
    if (this.rolloutSeq !== undefined && s.seq < this.rolloutSeq) return { ...s, rollout: undefined };
    return s;
  }

  async wroteRollout(s: CommitStatus, cacheDir: string | undefined): Promise<void> {
    if (!s.rollout || s.seq === undefined) return;
    this.rolloutSeq = Math.max(this.rolloutSeq ?? 0, s.seq);
    if (cacheDir !== undefined) await fs.promises.writeFile(join(cacheDir, ROLLOUT_SEQ_FILE), `${this.rolloutSeq}\n`);
  }
}
