// What the two waits of SPEC §19 (update locks, maintenance windows) share: at most one revision waits, and since
// when is kept through its retakes until it goes ahead or another revision is taken up instead.
export abstract class RevisionWait {
  /** The revision waited for and since when. */
  protected started?: { revision: string; since: number };

  protected constructor(protected readonly now: () => number) {}

  /** When `revision` began to wait: kept from an earlier wait of the same revision, else now. */
  protected begin(revision: string): number {
    const since = this.started?.revision === revision ? this.started.since : this.now();
    this.started = { revision, since };
    return since;
  }

  /** The revision waiting (or being taken up again after its wait), if any. */
  waitingFor(): string | undefined {
    return this.started?.revision;
  }

  /** Stops the timers and watches of the wait in progress, if any. */
  abstract cancel(): void;

  /** `revision` is taken up: a wait for another one ends (it is behind what runs from now on). */
  forget(revision: string): void {
    if (this.started?.revision === revision) return;
    this.cancel();
    this.started = undefined;
  }

  /** `revision` goes ahead (its locks free or not waited for, its window open or overridden): its wait is over. */
  done(revision: string): void {
    if (this.started?.revision !== revision) return;
    this.cancel();
    this.started = undefined;
  }
}
