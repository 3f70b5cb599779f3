// The human form of a reconcile: the `[agent] reconcile plan …` line of SPEC §9 and a reason per component.
import type { Reconcile } from '../../core/diff.js';

export function reconcileLine(r: Reconcile): string {
  const list = (xs: string[]) => `[${xs.join(' ')}]`;
  return `[agent] reconcile plan stop_order=${list(r.stopOrder)} start_order=${list(r.startOrder)} no_touch=${list(r.noTouch)}`;
}

/** The action a component gets, as one word. */
export function actionOf(r: Reconcile, name: string): 'restart' | 'start' | 'stop' | 'keep' {
  const stops = r.stopOrder.includes(name);
  const starts = r.startOrder.includes(name);
  return stops && starts ? 'restart' : starts ? 'start' : stops ? 'stop' : 'keep';
}

/** Components in the order a reader wants: start order, then what is only stopped. */
export function componentsInOrder(r: Reconcile): string[] {
  const order = r.layers.flat();
  const seen = new Set(order);
  for (const n of Object.keys(r.reasons)) if (!seen.has(n)) order.push(n);
  return order;
}

export function renderReconcileText(r: Reconcile, header: string): string {
  const names = componentsInOrder(r);
  const width = Math.max(9, ...names.map((n) => n.length));
  const lines = [header, reconcileLine(r), `layers: ${r.layers.map((l, i) => `${i}=[${l.join(' ')}]`).join(' ')}`];
  for (const n of names) lines.push(`  ${n.padEnd(width)}  ${actionOf(r, n).padEnd(7)}  ${r.reasons[n]}`);
  return lines.join('\n') + '\n';
}
