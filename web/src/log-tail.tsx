// A component's log, followed live. Lines go straight into the <pre>'s text (batched per frame) rather than through
// Preact: a chatty component would otherwise re-render the page for every line.
import { useEffect, useRef, useState } from 'preact/hooks';
import { followEventStream } from './event-stream.js';

const MAX_LINES = 1000;
/** How close to the bottom counts as "at the bottom" (a wheel notch short of it is not reading back). */
const STICK_PX = 24;

type Status = { kind: 'connecting' | 'live' | 'reconnecting' } | { kind: 'error'; message: string };

export function LogTail({ name }: { name: string }) {
  const [stderr, setStderr] = useState(false);
  const [status, setStatus] = useState<Status>({ kind: 'connecting' });
  const [following, setFollowing] = useState(true);
  const pre = useRef<HTMLPreElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    const lines: string[] = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      const el = pre.current;
      if (!el) return;
      el.textContent = lines.join('\n');
      if (stick.current) el.scrollTop = el.scrollHeight;
    };
    const schedule = () => {
      frame ||= requestAnimationFrame(flush);
    };
    const push = (line: string) => {
      lines.push(line);
      if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES);
      schedule();
    };
    setStatus({ kind: 'connecting' });
    stick.current = true;
    setFollowing(true);
    schedule();
    const path = `/v1/logs/${name.split('/').map(encodeURIComponent).join('/')}?lines=200&stderr=${stderr}&follow=true`;
    const stop = followEventStream(path, {
      // Each connection sends the last lines again: start over rather than show them twice.
      onOpen: () => {
        lines.length = 0;
        schedule();
      },
      onLive: (live) => setStatus({ kind: live ? 'live' : 'reconnecting' }),
      onFatal: (e) =>
        setStatus({
          kind: 'error',
          message: e.code === 'KS_COMPONENT_NOT_FOUND' ? `No log for ${name}: ${e.message}` : e.message,
        }),
      onEvent(type, data) {
        if (type === 'line') push(typeof data === 'string' ? data : String((data as { text?: unknown }).text ?? ''));
        else if (type === 'rotated') push('── log rotated ──');
      },
    });
    return () => {
      stop();
      cancelAnimationFrame(frame);
    };
  }, [name, stderr]);

  const onScroll = () => {
    const el = pre.current;
    if (!el) return;
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX;
    if (atBottom !== stick.current) {
      stick.current = atBottom;
      setFollowing(atBottom);
    }
  };
  const jump = () => {
    const el = pre.current;
    if (!el) return;
    stick.current = true;
    setFollowing(true);
    el.scrollTop = el.scrollHeight;
  };

  const statusText =
    status.kind === 'error'
      ? status.message
      : status.kind === 'live'
        ? following
          ? 'following'
          : 'paused while you read back'
        : status.kind === 'connecting'
          ? 'connecting…'
          : 'reconnecting…';
  return (
    <section class="log-section" aria-labelledby="log-title">
      <div class="log-head">
        <h2 id="log-title">Log</h2>
        <div class="segmented" role="group" aria-label="Stream">
          <button type="button" class="small" aria-pressed={!stderr} onClick={() => setStderr(false)}>
            stdout
          </button>
          <button type="button" class="small" aria-pressed={stderr} onClick={() => setStderr(true)}>
            stderr
          </button>
        </div>
        <span class={`log-status${status.kind === 'error' ? ' error' : ''}`}>{statusText}</span>
        {!following && (
          <button type="button" class="small" onClick={jump}>
            Jump to latest
          </button>
        )}
      </div>
      <pre
        id="log"
        ref={pre}
        aria-live="polite"
        tabIndex={0}
        aria-label={`${name} ${stderr ? 'stderr' : 'stdout'}, last ${MAX_LINES} lines at most`}
        onScroll={onScroll}
      />
    </section>
  );
}
