// The three actions of one component. aria-disabled rather than disabled while another action runs: the buttons stay
// in the Tab order and focus can return to them when the dialog closes.
import { useContext } from 'preact/hooks';
import { ActionContext, ACTION_LABELS } from './action-runner.js';
import type { ActionName } from './api-types.js';

const ACTIONS: ActionName[] = ['restart', 'stop', 'start'];

export function ActionButtons({ name }: { name: string }) {
  const runner = useContext(ActionContext);
  return (
    <div class="actions">
      {ACTIONS.map((action) => (
        <button
          key={action}
          type="button"
          class={`small action-${action}`}
          aria-label={`${ACTION_LABELS[action]} ${name}`}
          aria-disabled={runner.busy ? 'true' : undefined}
          onClick={() => runner.busy || runner.request(action, name)}
        >
          {ACTION_LABELS[action]}
        </button>
      ))}
    </div>
  );
}
