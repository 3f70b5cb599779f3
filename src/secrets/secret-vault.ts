// The values of the secrets the agent has opened, in its memory only (never in the state store, a log or a report),
// found by their keyed digest: a component carries the digests of what it reads (DesiredComponent.secretDigests), the
// runtime asks the vault for the values when it starts one. Values of the last few revisions stay, so that an instance
// of the previous revision restarted during a roll still finds its own.

import { scrubber } from './scrub-values.js';

/** What a runtime needs: a value by its digest. */
export interface SecretValues {
  valueOf(digest: string): Uint8Array | undefined;
}

/** Revisions opened but held at a rollout gate count too: a few, since values are small. */
const KEPT_REVISIONS = 8;

export class SecretVault implements SecretValues {
  private readonly byDigest = new Map<string, Uint8Array>();
  /** The digests each of the last revisions used, newest last. */
  private readonly generations: Set<string>[] = [];

  valueOf(digest: string): Uint8Array | undefined {
    return this.byDigest.get(digest);
  }

  /** Whether any value is held (nothing to scrub otherwise). */
  get holdsAny(): boolean {
    return this.byDigest.size > 0;
  }

  /** Keeps the values of a revision just opened; values no revision of the last KEPT_REVISIONS uses are dropped. */
  keep(values: ReadonlyMap<string, Uint8Array>): void {
    this.generations.push(new Set(values.keys()));
    for (const [d, v] of values) this.byDigest.set(d, v);
    while (this.generations.length > KEPT_REVISIONS) this.generations.shift();
    const live = new Set(this.generations.flatMap((g) => [...g]));
    for (const d of [...this.byDigest.keys()]) if (!live.has(d)) this.byDigest.delete(d);
    this.scrubText = undefined;
  }

  /** Every value held, as text: what published text is scrubbed of. */
  texts(): string[] {
    const decoder = new TextDecoder();
    return [...this.byDigest.values()].map((v) => decoder.decode(v));
  }

  /**
   * `text` with every value held replaced by `[secret]`: as written, JSON-escaped, URL-encoded or in base64, a line
   * of a value of several, and a piece of one beside a cut (`… [cut: N bytes]`) or at the text's very start or end
   * (text sliced to a length): the forms of status/scrub-values.ts. The identity when no value is held.
   */
  scrub(text: string): string {
    if (this.byDigest.size === 0) return text;
    this.scrubText ??= scrubber(
      this.texts().map((value) => ({ label: '[secret]', value })),
      { edges: true },
    );
    return this.scrubText(text);
  }

  private scrubText: ((text: string) => string) | undefined;
}
