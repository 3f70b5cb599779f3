// A binary max-heap by a numeric key: the priority queue of the stop order's topological sort (diff.ts), which
// takes the highest-ranked component first. Apart because it is a plain data structure, not the reconcile.

export class MaxHeap<T> {
  private items: T[] = [];
  constructor(private readonly key: (t: T) => number) {}
  get size(): number {
    return this.items.length;
  }
  push(t: T): void {
    const a = this.items;
    a.push(t);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.key(a[p]!) >= this.key(a[i]!)) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.key(a[l]!) > this.key(a[m]!)) m = l;
        if (r < a.length && this.key(a[r]!) > this.key(a[m]!)) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}
