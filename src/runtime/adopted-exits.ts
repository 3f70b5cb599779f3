// Exits of processes adopted after an agent restart: they are not the agent's children, so no exit event tells, and
// their exit status is unknowable. Noticed by a slow check of /proc, one timer for all of them.
import type { ExitStatus } from './runtime.js';
import { isDeadState, readProcStat } from './proc-identity.js';

export class AdoptedExits {
  /** Instances adopted, until they exit. */
  private readonly adopted = new Set<{ pid: number; startTime: string; resolve: (s: ExitStatus) => void }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pollMs: number) {}

  /** Resolves (code and signal null) once process `pid`, started at `startTime`, is gone or a zombie. */
  watch(pid: number, startTime: string): Promise<ExitStatus> {
    return new Promise<ExitStatus>((resolve) => {
      this.adopted.add({ pid, startTime, resolve });
      this.arm();
    });
  }

  private arm(): void {
    if (this.timer !== undefined || this.adopted.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      for (const a of this.adopted) {
        const st = readProcStat(a.pid);
        if (st && st.startTime === a.startTime && !isDeadState(st.state)) continue;
        this.adopted.delete(a);
        a.resolve({ code: null, signal: null });
      }
      this.arm();
    }, this.pollMs);
    this.timer.unref();
  }
}
