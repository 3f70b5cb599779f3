// The confirmation of an action, listing exactly what its dry run said it would touch and what it leaves alone.
// A modal <dialog>: the browser traps focus in it and Escape cancels it.
import { useEffect, useRef } from 'preact/hooks';
import { ACTION_LABELS, type ActionStatus, type PendingAction } from './action-runner.js';

const EXPLAIN = {
  restart:
    'Its hard dependents restart with it. Each list runs in this order; each start waits until the component is healthy.',
  stop: 'Its hard dependents stop first. What stops stays stopped until it is started again or a revision changes it.',
  start: 'The start waits until it is healthy.',
};

function NameList({ list, names, label }: { list: string; names: string[]; label: string }) {
  return (
    <div class="name-list">
      <h3 id={`list-${list}`}>{label}</h3>
      <ul data-list={list} aria-labelledby={`list-${list}`}>
        {names.map((n) => (
          <li key={n}>{n}</li>
        ))}
      </ul>
      {names.length === 0 && <p class="muted">none</p>}
    </div>
  );
}

interface Props {
  pending: PendingAction | null;
  onConfirm(): void;
  onCancel(): void;
}

export function ActionDialog({ pending, onConfirm, onCancel }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (pending && !dialog.open) dialog.showModal();
    if (!pending && dialog.open) dialog.close();
  }, [pending]);

  const label = pending ? `${ACTION_LABELS[pending.action]} ${pending.name}` : '';
  return (
    <dialog id="confirm" ref={ref} aria-labelledby="confirm-title" onClose={onCancel}>
      {pending && (
        <div class="dialog-body">
          <h2 id="confirm-title">{label}?</h2>
          <p>{EXPLAIN[pending.action]}</p>
          <div class="lists">
            <NameList list="stopOrder" label="Stops, in order" names={pending.plan.stopOrder ?? []} />
            <NameList list="startOrder" label="Starts, in order" names={pending.plan.startOrder ?? []} />
            {pending.plan.waitingFor && (
              <NameList list="waitingFor" label="Waits for" names={pending.plan.waitingFor} />
            )}
            <NameList list="untouched" label="Not touched" names={pending.untouched} />
          </div>
          <div class="dialog-buttons">
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
            <button
              type="button"
              class={pending.action === 'restart' ? 'primary' : 'primary danger'}
              data-confirm
              onClick={onConfirm}
            >
              {label}
            </button>
          </div>
        </div>
      )}
    </dialog>
  );
}

/** Always in the page (a live region must exist before it changes); empty until an action is asked for. */
export function ActionStatusLine({ status, onDismiss }: { status: ActionStatus | null; onDismiss(): void }) {
  const waiting = status && !status.error && status.text.endsWith('…');
  return (
    <div class={`action-bar${status ? ' shown' : ''}${status?.error ? ' failed' : ''}`}>
      <div id="action-status" role="status" class={status?.error ? 'error' : waiting ? 'waiting' : undefined}>
        {status && (
          <>
            {waiting && <span class="spinner" aria-hidden="true" />}
            <span class="action-text">{status.text}</span>
            {status.details && status.details.length > 0 && (
              <ul class="action-details">
                {status.details.map((c) => (
                  <li key={c.name}>{` ${c.name}: ${c.state}${c.reason ? ` (${c.reason})` : ''};`}</li>
                ))}
              </ul>
            )}
          </>
        )}
      </div>
      {status && !waiting && (
        <button type="button" class="small quiet" onClick={onDismiss} aria-label="Dismiss the action status">
          Dismiss
        </button>
      )}
    </div>
  );
}
