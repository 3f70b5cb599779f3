// The applies, newest first: how each ended, what it stopped and started, and what failed.
import type { HistoryEntryView as HistoryEntry } from '../../src/api/views.js';
import { Badge } from './badge.js';
import { shortRevision } from './format.js';
import { duration, localTime } from './relative-time.js';
import { TimeAgo } from './time-ago.js';

function Order({ label, names }: { label: string; names: string[] | undefined }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{names?.length ? <span class="order">{names.join(' → ')}</span> : <span class="muted">nothing</span>}</dd>
    </>
  );
}

function Entry({ e }: { e: HistoryEntry }) {
  const took = duration(e.startedAt, e.finishedAt);
  return (
    <li class="apply" data-history-id={e.id} data-outcome={e.outcome} data-revision={e.revision}>
      <div class="apply-head">
        <Badge word={e.outcome} />
        <code title={e.revision}>{shortRevision(e.revision)}</code>
        <span class="muted" title={e.startedAt ? localTime(e.startedAt) : undefined}>
          <TimeAgo iso={e.startedAt} />
          {took && ` · took ${took}`}
        </span>
      </div>
      {e.summary && <p class="apply-summary wrap">{e.summary}</p>}
      <dl class="apply-facts">
        <dt>Plan</dt>
        <dd>
          <code>{e.planFile}</code>
          {e.target && <span class="muted"> · target {e.target}</span>}
        </dd>
        {e.reconcile && (
          <>
            <Order label="Stopped" names={e.reconcile.stopOrder} />
            <Order label="Started" names={e.reconcile.startOrder} />
            {e.reconcile.noTouch && e.reconcile.noTouch.length > 0 && (
              <>
                <dt>Untouched</dt>
                <dd>{e.reconcile.noTouch.join(', ')}</dd>
              </>
            )}
          </>
        )}
      </dl>
      {e.failed.length > 0 && (
        <ul class="failures">
          {e.failed.map((f) => (
            <li key={f.name}>
              <strong>{f.name}</strong>: <span class="wrap">{f.reason}</span>
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}

export function HistoryList({ entries }: { entries: HistoryEntry[] }) {
  if (entries.length === 0) return <p class="muted">No applies yet.</p>;
  return (
    <ol class="applies">
      {entries.map((e) => (
        <Entry key={e.id} e={e} />
      ))}
    </ol>
  );
}
