// An agent update (SPEC §17) in the header, under the device's health: the new version on trial until it reports
// success, one that failed and was put back (and why), or a version the fleet names that this agent cannot update
// itself to. The word in a badge, the rest in a sentence; nothing when there is no update to tell of.
import type { AgentUpdateView as AgentUpdate } from '../../src/api/views.js';
import type { Tone } from './badge.js';
import { shortRevision } from './format.js';
import { TimeAgo } from './time-ago.js';

const BADGE: Record<string, [word: string, tone: Tone]> = {
  trial: ['agent on trial', 'busy'],
  failed: ['agent update failed', 'bad'],
  unsupported: ['no self-update', 'warn'],
};

export function AgentUpdateLine({ update }: { update: AgentUpdate }) {
  const [word, tone] = BADGE[update.state] ?? [`agent update ${update.state}`, 'idle'];
  const commit = update.commit ? <code title={update.commit}>{shortRevision(update.commit)}</code> : null;
  let text;
  if (update.state === 'trial')
    text = (
      <>
        v{update.version} since {update.since ? <TimeAgo iso={update.since} /> : '—'}, until it reports success
        {commit && <> for {commit}</>}
        {update.next && (
          <span data-field="agent-update-next">
            ; v{update.next}
            {update.nextCommit && (
              <>
                {' '}
                (commit <code title={update.nextCommit}>{shortRevision(update.nextCommit)}</code>)
              </>
            )}{' '}
            waits for it
          </span>
        )}
      </>
    );
  else if (update.state === 'failed')
    text = (
      <>
        v{update.version} was put back{commit && <> (commit {commit})</>}
        {update.reason && `: ${update.reason}`}
      </>
    );
  else if (update.state === 'unsupported')
    text = (
      <>
        the fleet names v{update.version}; this agent cannot update itself{update.reason && ` (${update.reason})`}
      </>
    );
  else
    text = (
      <>
        v{update.version}
        {update.reason && `: ${update.reason}`}
      </>
    );
  return (
    <p class="agent-update" data-field="agent-update" data-state={update.state}>
      <span class={`badge tone-${tone}`}>{word}</span> {text}
    </p>
  );
}
