// #/history: every apply the store keeps, a page at a time.
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from './api-client.js';
import type { HistoryEntryView as HistoryEntry, HistoryPageView as Page } from '../../src/api/views.js';
import type { Loaded } from './dashboard-data.js';
import { HistoryList } from './history-list.js';

export function HistoryPage({ first }: { first: Loaded<Page> }) {
  const [older, setOlder] = useState<{ entries: HistoryEntry[]; nextBefore: number | null } | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => {
    document.title = 'History · Keystone';
  }, []);

  // The first page is kept fresh by the events; older pages are appended below it and do not change.
  const firstEntries = first.value?.entries ?? [];
  const seen = new Set(firstEntries.map((e) => e.id));
  const entries = [...firstEntries, ...(older?.entries.filter((e) => !seen.has(e.id)) ?? [])].sort(
    (a, b) => b.id - a.id,
  );
  const next = older ? older.nextBefore : (first.value?.nextBefore ?? null);

  async function more() {
    if (next === null) return;
    setLoading(true);
    setError(undefined);
    try {
      const page = await api<Page>(`/v1/history?limit=50&before=${next}`);
      // The first page as it is now goes in too: once it moves on, its last entries would otherwise fall between the two.
      setOlder((o) => ({ entries: [...(o?.entries ?? firstEntries), ...page.entries], nextBefore: page.nextBefore }));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setLoading(false);
    }
  }

  return (
    <section id="history" aria-labelledby="history-title">
      <h1 id="history-title" tabIndex={-1}>
        Applies
      </h1>
      <div class="panel">
        {!first.loaded && <p class="muted">Loading…</p>}
        {first.error && <p class="error">Could not read the history: {first.error.message}</p>}
        {first.value && <HistoryList entries={entries} />}
        {error && <p class="error">{error}</p>}
        {next !== null && first.value && (
          <button type="button" class="more" onClick={() => void more()} aria-busy={loading}>
            Older applies
          </button>
        )}
      </div>
    </section>
  );
}
