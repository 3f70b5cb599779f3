// One colour family per kind of news, shared by states, health and apply outcomes; the word is always shown beside it.
export type Tone = 'ok' | 'busy' | 'warn' | 'bad' | 'idle';

const TONES: Record<string, Tone> = {
  running: 'ok',
  healthy: 'ok',
  success: 'ok',
  // A failed apply whose components got healthy later: good news, but not the apply's success (SPEC §5).
  recovered: 'ok',
  installing: 'busy',
  starting: 'busy',
  stopping: 'busy',
  applying: 'busy',
  unhealthy: 'warn',
  backoff: 'warn',
  interrupted: 'warn',
  held: 'warn',
  'crash-looping': 'bad',
  failed: 'bad',
  failure: 'bad',
  rejected: 'bad',
  stopped: 'idle',
  unknown: 'idle',
};

export const toneOf = (word: string): Tone => TONES[word] ?? 'idle';

export function Badge({ word, title }: { word: string; title?: string | undefined }) {
  return (
    <span class={`badge tone-${toneOf(word)}`} title={title}>
      {word}
    </span>
  );
}
