// Size-based rotation of the components' logs: the children write to their files directly (they outlive the agent),
// so the agent rotates them, copy-then-truncate, on a timer.
import type { Logger } from '../log/logger.js';
import { rotateComponentLogs } from '../runtime/log-files.js';
import type { StateStore } from '../store/state-store.js';

export function rotateLogsEvery(o: {
  store: StateStore;
  logDirOf: (name: string) => string;
  maxBytes: number;
  keep: number;
  everyMs: number;
  log: Logger;
}): () => void {
  const timer = setInterval(() => {
    void (async () => {
      for (const rec of o.store.components()) {
        const noSpace = (path: string, err: Error) =>
          o.log.warn(
            { component: rec.name, path, err: err.message, code: 'KS_LOG_NO_SPACE' },
            'the file system is full: log truncated without keeping a copy',
          );
        const rotated = await rotateComponentLogs(o.logDirOf(rec.name), o.maxBytes, o.keep, noSpace).catch(() => []);
        for (const path of rotated) o.log.info({ component: rec.name, path, revision: rec.revision }, 'rotated log');
      }
    })();
  }, o.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
