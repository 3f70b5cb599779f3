// Following the containers a ContainerRuntime started or adopted: each one's exit from the engine's wait (polled
// when the wait fails) and the copy of its output into the log files. Apart from container-runtime.ts because it is
// the runtime's only long-lived state per container, with its own way of ending when the agent leaves.
import type Docker from 'dockerode';
import type { Engine } from './container-engine.js';
import { engineStatus } from './container-error.js';
import { short } from './container-engines.js';
import { pumpContainerLogs, type LogPump } from './container-log-pump.js';
import type { ContainerRuntimeOptions } from './container-runtime-options.js';
import type { ExitStatus } from './runtime.js';

interface Watch {
  exited: Promise<ExitStatus>;
  pump: LogPump;
  abort: AbortController;
}

export class ContainerWatches {
  private readonly watches = new Map<string, Watch>();

  constructor(
    private readonly opts: Pick<ContainerRuntimeOptions, 'log' | 'logDrainMs' | 'exitPollMs'>,
    private readonly now: () => number,
  ) {}

  /** The watch of a container, while it is followed. */
  get(id: string): Watch | undefined {
    return this.watches.get(id);
  }

  /**
   * Stops watching exits and copying output, leaving every container running: the agent's own exit. Resolves once
   * each copy has saved its cursor, so that the next agent resumes after the last line copied.
   */
  async close(): Promise<void> {
    const pumps = [...this.watches.values()].map((w) => {
      w.abort.abort();
      w.pump.stop();
      return w.pump.done;
    });
    this.watches.clear();
    await Promise.all(pumps);
  }

  /** Exit from the engine's wait (its status code), after the container's last output has reached the log files. */
  watch(engine: Engine, id: string, logDir: string | undefined): Promise<ExitStatus> {
    const abort = new AbortController();
    const container = engine.docker.getContainer(id);
    const pump: LogPump = logDir
      ? pumpContainerLogs(container, logDir, {
          now: this.now,
          onError: (e) =>
            this.opts.log?.warn({ container: short(id), err: e.message }, 'copying container output failed'),
        })
      : { done: Promise.resolve(), stop: () => {} };
    const exited = (async (): Promise<ExitStatus> => {
      let code: number | null;
      try {
        code = ((await container.wait({ abortSignal: abort.signal })) as { StatusCode: number }).StatusCode;
      } catch (e) {
        if (abort.signal.aborted) return new Promise<ExitStatus>(() => {}); // the agent is leaving: no exit to report
        code = engineStatus(e) === 404 ? null : await this.pollExit(container, abort.signal);
      }
      await this.drain(id);
      this.watches.delete(id);
      return { code, signal: null };
    })();
    this.watches.set(id, { exited, pump, abort });
    return exited;
  }

  /** When the engine's wait fails (its connection dropped): inspect until the container is no longer running. */
  private async pollExit(container: Docker.Container, signal: AbortSignal): Promise<number | null> {
    for (;;) {
      await new Promise((r) => setTimeout(r, this.opts.exitPollMs ?? 1000).unref());
      if (signal.aborted) return new Promise<number | null>(() => {});
      try {
        const s = (await container.inspect()).State;
        if (!s.Running) return s.ExitCode;
      } catch (e) {
        if (engineStatus(e) === 404) return null;
      }
    }
  }

  /** Waits (boundedly) for a container's output to be copied. */
  async drain(id: string): Promise<void> {
    const w = this.watches.get(id);
    if (!w) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([w.pump.done, new Promise<void>((r) => (timer = setTimeout(r, this.opts.logDrainMs ?? 2000)))]);
    clearTimeout(timer);
    w.pump.stop();
  }
}
