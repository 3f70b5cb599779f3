// The values of the secrets the agent has opened, in its memory only (never in the state store, a log or a report),
// found by their keyed digest: a component carries the digests of what it reads (DesiredComponent.secretDigests), the
// runtime asks the vault for the values when it starts one. Values of the last few revisions stay, so that an instance
// of the previous revision restarted during a roll still finds its own.

/** What a runtime needs: a value by its digest. */
export interface SecretValues {
  valueOf(digest: string): Uint8Array | undefined;
}

/** Revisions opened but held at a rollout gate count too: a few, since values are small. */
const KEPT_REVISIONS = 8;
/** Shorter values are not scrubbed from text (they would match inside every word); a secret is longer. */
const MIN_SCRUB = 4;

export class SecretVault implements SecretValues {
  private readonly byDigest = new Map<string, Uint8Array>();
  /** The digests each of the last revisions used, newest last. */
  private readonly generations: Set<string>[] = [];

  valueOf(digest: string): Uint8Array | undefined {
    return this.byDigest.get(digest);
  }

  /** Keeps the values of a revision just opened; values no revision of the last KEPT_REVISIONS uses are dropped. */
  keep(values: ReadonlyMap<string, Uint8Array>): void {
    this.generations.push(new Set(values.keys()));
    for (const [d, v] of values) this.byDigest.set(d, v);
    while (this.generations.length > KEPT_REVISIONS) this.generations.shift();
    const live = new Set(this.generations.flatMap((g) => [...g]));
    for (const d of [...this.byDigest.keys()]) if (!live.has(d)) this.byDigest.delete(d);
    this.scrubList = undefined;
  }

  /** Every value held, as text (those of MIN_SCRUB characters or more): what published text is scrubbed of. */
  texts(): string[] {
    return (this.scrubList ??= this.makeScrubList()).map((s) => s.text);
  }

  /**
   * `text` with every value held replaced by `[secret]`, also as JSON escapes it (a log line is JSON): the last guard
   * on every log line, whatever a component's output or an error quoted. The identity when no value is held.
   */
  scrub(text: string): string {
    const list = (this.scrubList ??= this.makeScrubList());
    if (list.length === 0) return text;
    let out = text;
    for (const { text: v, json } of list) {
      if (out.includes(v)) out = out.split(v).join('[secret]');
      if (json !== v && out.includes(json)) out = out.split(json).join('[secret]');
    }
    return out;
  }

  private scrubList: Array<{ text: string; json: string }> | undefined;
  private makeScrubList(): Array<{ text: string; json: string }> {
    const decoder = new TextDecoder();
    const out: Array<{ text: string; json: string }> = [];
    for (const v of this.byDigest.values()) {
      const text = decoder.decode(v);
      // A value of several lines is also scrubbed line by line: output is read and quoted a line at a time.
      for (const t of new Set([text, ...text.split(/\r?\n/)])) if (t.trim().length >= MIN_SCRUB) out.push({ text: t, json: JSON.stringify(t).slice(1, -1) });
    }
    // Longest first: a value that contains another is replaced whole.
    return out.sort((a, b) => b.text.length - a.text.length);
  }
}
