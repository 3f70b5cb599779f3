// What the device runs and on whose authority: the commit, its signature (or, loudly, the lack of one), and what is
// waiting or was refused.
import type { ApiError } from './api-client.js';
import type { RejectedView as Rejected } from '../../src/api/views.js';
import type { RevisionView as Revision } from '../../src/api/views.js';
import type { Loaded } from './dashboard-data.js';
import { shortRevision } from './format.js';
import { localTime } from './relative-time.js';
import { TimeAgo } from './time-ago.js';

function When({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <>—</>;
  return (
    <>
      {localTime(iso)}{' '}
      <span class="muted">
        (<TimeAgo iso={iso} />)
      </span>
    </>
  );
}

function RejectedNote({ rejected }: { rejected: Rejected }) {
  const reason =
    rejected.code && !rejected.reason.startsWith(rejected.code)
      ? `${rejected.code}: ${rejected.reason}`
      : rejected.reason;
  return (
    <div class="callout tone-bad" data-field="rejected">
      <p>
        <strong>Refused</strong> <code title={rejected.revision}>{shortRevision(rejected.revision)}</code>{' '}
        <TimeAgo iso={rejected.at} />; the device still runs the revision above.
      </p>
      <p class="wrap">{reason}</p>
    </div>
  );
}

export function RevisionPanel({
  revision,
  rejected,
}: {
  revision: Loaded<Revision>;
  rejected: Rejected | null | undefined;
}) {
  const r = revision.value;
  const noRevision = (revision.error as ApiError | undefined)?.code === 'KS_NO_REVISION';
  return (
    <section id="revision" class="panel" aria-labelledby="revision-title">
      <h2 id="revision-title">Revision</h2>
      {!revision.loaded && <p class="muted">Loading…</p>}
      {noRevision && <p>Nothing has been applied on this device yet.</p>}
      {revision.error && !noRevision && <p class="error">Could not read the revision: {revision.error.message}</p>}
      {r && (
        <>
          {r.unsigned && (
            <div class="callout tone-warn" data-field="unsigned">
              <p>
                <strong>
                  {r.warning ??
                    'UNSIGNED: this revision was applied without a signature check (--allow-unsigned, development only)'}
                </strong>
              </p>
            </div>
          )}
          <dl class="facts">
            <dt>Commit</dt>
            <dd>
              <code title={r.id}>{shortRevision(r.id)}</code>
            </dd>
            <dt>Signature</dt>
            <dd>
              {r.unsigned ? <span class="badge tone-warn">UNSIGNED</span> : <span class="badge tone-ok">signed</span>}
            </dd>
            {!r.unsigned && (
              <>
                <dt>Signers</dt>
                <dd>
                  {r.signers?.length
                    ? r.signers.map((s) => (
                        <code key={s} class="signer">
                          {s}
                        </code>
                      ))
                    : '—'}
                </dd>
                <dt>Signed at</dt>
                <dd>
                  <When iso={r.signedAt} />
                </dd>
              </>
            )}
            <dt>Applied at</dt>
            <dd>
              <When iso={r.appliedAt} />
            </dd>
            <dt>Plan</dt>
            <dd>
              <code>{r.planFile}</code>
            </dd>
            {r.target && (
              <>
                <dt>Target</dt>
                <dd>{r.target}</dd>
              </>
            )}
            {r.wave && (
              <>
                <dt>Wave</dt>
                <dd>{r.wave}</dd>
              </>
            )}
            <dt>Source</dt>
            <dd class="wrap">{r.source}</dd>
            {r.sync?.following && (
              <>
                <dt>Follows</dt>
                <dd class="wrap">{r.sync.following}</dd>
              </>
            )}
          </dl>
          {r.sync?.suspended && (
            <div class="callout tone-warn" data-field="suspended">
              <p>
                <strong>Git sync suspended</strong> by the manual apply{' '}
                <code>{shortRevision(r.sync.suspended.revision)}</code>
                {r.sync.suspended.since && (
                  <>
                    {' '}
                    <TimeAgo iso={r.sync.suspended.since} />
                  </>
                )}
                {r.sync.held && (
                  <>
                    ; commit <code>{shortRevision(r.sync.held)}</code> is waiting
                  </>
                )}
                . Run <code>keystonectl resume</code> to follow Git again.
              </p>
            </div>
          )}
          {(r.rolledBack?.length ?? 0) > 0 && (
            <div class="callout tone-bad" data-field="rolled-back">
              <p>
                <strong>{r.rolledBack!.map((g) => g.group).join(', ')}</strong>: this revision could not update{' '}
                {r.rolledBack!.length === 1 ? 'it' : 'them'}; rolled back to the previous members until another
                revision.
              </p>
            </div>
          )}
          {r.waiting && (
            <div class="callout tone-warn" data-field="waiting">
              <p>
                Commit <code title={r.waiting.revision}>{shortRevision(r.waiting.revision)}</code> waits:{' '}
                {r.waiting.reason}
                {r.waiting.since && (
                  <>
                    {' '}
                    (since <TimeAgo iso={r.waiting.since} />)
                  </>
                )}
                . What runs keeps running; it is applied the moment the lock is let go
                {r.waiting.holders.some((h) => h.timeoutAt) ? ', or when its lock_timeout passes' : ''}.
              </p>
            </div>
          )}
          {(r.rollout?.length ?? 0) > 0 && (
            <div class="holds" data-field="rollout">
              <h3>Held at the rollout gate</h3>
              <ul>
                {r.rollout!.map((h) => (
                  <li key={h.revision}>
                    <code title={h.revision}>{shortRevision(h.revision)}</code> wave <strong>{h.wave}</strong>:{' '}
                    {h.reason}
                    {h.checkedAt && (
                      <span class="muted">
                        {' '}
                        (checked <TimeAgo iso={h.checkedAt} />)
                      </span>
                    )}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </>
      )}
      {rejected && <RejectedNote rejected={rejected} />}
    </section>
  );
}
