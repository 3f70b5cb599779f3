// A relative time with its exact moment at hand: the title for the mouse, datetime for machines.
import { localTime, relativeTime, useTick } from './relative-time.js';

export function TimeAgo({ iso }: { iso: string | null | undefined }) {
  useTick();
  if (!iso) return <span>—</span>;
  return (
    <time dateTime={iso} title={`${localTime(iso)} (${iso})`}>
      {relativeTime(iso)}
    </time>
  );
}
