// How `keystonectl apply` shows an apply as it happens: on a terminal, a table of the components it touches redrawn in
// place; otherwise (a pipe, a CI log) one plain line per event, which reads well after the fact.

/** Progress lines of POST /v1/apply, as far as the renderer needs them. */
export type ProgressEvent =
  | { event: 'accepted'; revision: string; planFile: string; suspendedSync: boolean }
  | { event: 'reconcile'; stopOrder: string[]; startOrder: string[]; noTouch: string[] }
  | { event: 'state'; component: string; state: string; reason?: string }
  | { event: 'pull'; component: string; image: string; status: string; currentBytes: number; totalBytes: number }
  | {
      event: 'done';
      outcome: string;
      summary: string;
      converged: boolean;
      components: Array<{ name: string; state: string; pid: number | null; reason: string | null }>;
    };

export interface ProgressView {
  update(e: ProgressEvent): void;
}

const list = (names: string[]) => `[${names.join(' ')}]`;

/** One line per event: `[agent] reconcile plan …`, `[supervisor] component=api state=running`. */
export function plainProgress(write: (s: string) => void): ProgressView {
  return {
    update(e) {
      switch (e.event) {
        case 'accepted':
          write(
            `[apply] revision=${e.revision} plan=${e.planFile} msg=accepted by the agent${e.suspendedSync ? ' (the Git sync is suspended until `keystonectl resume`)' : ''}\n`,
          );
          break;
        case 'reconcile':
          write(
            `[agent] reconcile plan stop_order=${list(e.stopOrder)} start_order=${list(e.startOrder)} no_touch=${list(e.noTouch)}\n`,
          );
          break;
        case 'state':
          write(
            `[supervisor] component=${e.component} state=${e.state}${e.reason ? ` reason=${JSON.stringify(e.reason)}` : ''}\n`,
          );
          break;
        case 'pull':
          write(
            `[containers] component=${e.component} image=${e.image} status=${JSON.stringify(e.status)}${e.totalBytes > 0 ? ` mb=${megabytes(e.currentBytes)}/${megabytes(e.totalBytes)}` : ''} msg=pulling image\n`,
          );
          break;
        case 'done':
          write(`[apply] outcome=${e.outcome} converged=${e.converged} msg=${e.summary}\n`);
      }
    },
  };
}

/**
 * A live table: one row per component the apply stops or starts (untouched ones are summed up on one line), each
 * with its current state, redrawn in place with ANSI cursor moves as states arrive.
 */
export function terminalProgress(write: (s: string) => void, now: () => number = Date.now): ProgressView {
  const rows = new Map<string, { state: string; reason?: string }>();
  let header = '';
  let untouched = 0;
  let drawn = 0;
  let began = now();
  const draw = () => {
    const width = Math.max(0, ...[...rows.keys()].map((n) => n.length));
    const lines = [
      header,
      ...[...rows].map(
        ([n, r]) => `  ${mark(r.state)} ${n.padEnd(width)}  ${r.state}${r.reason ? `  (${r.reason})` : ''}`,
      ),
    ];
    if (untouched) lines.push(`  = ${untouched} untouched (no restart)`);
    lines.push(`  ${((now() - began) / 1000).toFixed(1)}s`);
    // Up over what was drawn last, then each line cleared and rewritten.
    write((drawn ? `\x1b[${drawn}A` : '') + lines.map((l) => `\x1b[2K${l}\n`).join(''));
    drawn = lines.length;
  };
  return {
    update(e) {
      switch (e.event) {
        case 'accepted':
          began = now();
          write(
            `applying ${e.planFile} as ${e.revision}${e.suspendedSync ? ' — the Git sync is suspended until `keystonectl resume`' : ''}\n`,
          );
          return;
        case 'reconcile':
          header = `stop ${list(e.stopOrder)}  start ${list(e.startOrder)}`;
          for (const n of e.stopOrder) rows.set(n, { state: 'to stop' });
          for (const n of e.startOrder) rows.set(n, { state: 'waiting' });
          untouched = e.noTouch.length;
          break;
        case 'state':
          if (!rows.has(e.component)) return;
          rows.set(e.component, { state: e.state, ...(e.reason && { reason: e.reason }) });
          break;
        case 'pull':
          if (!rows.has(e.component)) return;
          rows.set(e.component, {
            state: `pulling ${e.image}${e.totalBytes > 0 ? ` ${megabytes(e.currentBytes)}/${megabytes(e.totalBytes)} MB` : ` (${e.status})`}`,
          });
          break;
        case 'done':
          for (const c of e.components)
            if (rows.has(c.name)) rows.set(c.name, { state: c.state, ...(c.reason && { reason: c.reason }) });
          if (header) draw();
          write(`${e.converged ? '✔ converged' : `✘ ${e.outcome}`}: ${e.summary}\n`);
          return;
      }
      draw();
    },
  };
}

function mark(state: string): string {
  if (state === 'running') return '✔';
  if (state === 'failed' || state === 'crash-looping' || state === 'unhealthy') return '✘';
  if (state === 'stopped') return '■';
  return '…';
}

const megabytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
