// A fleet target's maintenance window (SPEC §19) as the fleet file spells it, checked and turned into minutes.
import * as v from 'valibot';
import { refine, strictObject } from './valid.js';
import { toWindow, windowProblem } from './maintenance-window.js';

const windowTable = strictObject({
  days: v.array(v.string()),
  from: v.string(),
  to: v.string(),
  timezone: v.string(),
});

export const windowSchema = v.pipe(
  windowTable,
  refine<v.InferOutput<typeof windowTable>>((w, ctx) => {
    const p = windowProblem(w);
    if (p) ctx.addIssue({ code: 'custom', path: [p.key], message: p.message });
  }),
  v.transform((w) => toWindow(w)),
);
