// How ids and instances read on screen.
import { isGroup, type ListItem } from './api-types.js';

/** A Git commit as people quote it (the CLI's 12); other revision ids (`dir:…`) are short already. */
export const shortRevision = (id: string | null | undefined): string =>
  !id ? '—' : /^[0-9a-f]{40,64}$/.test(id) ? id.slice(0, 12) : id;

export function instanceText(c: ListItem): string {
  if (isGroup(c)) {
    const up = c.members.filter((m) => m.state === 'running').length;
    const noun = c.kind === 'replicas' ? 'replica' : 'member';
    return `${up}/${c.members.length} ${noun}${c.members.length === 1 ? '' : 's'} up`;
  }
  if (c.pid !== null) return `pid ${c.pid}`;
  if (c.containerId) return c.containerId.slice(0, 12);
  return '—';
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(0)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}
