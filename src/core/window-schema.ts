// A fleet target's maintenance window (SPEC §19) as the fleet file spells it, checked and turned into minutes.
import { z } from 'zod';
import { toWindow, windowProblem } from './maintenance-window.js';

export const windowSchema = z
  .strictObject({
    days: z.array(z.string()),
    from: z.string(),
    to: z.string(),
    timezone: z.string(),
  })
  .superRefine((w, ctx) => {
    const p = windowProblem(w);
    if (p) ctx.addIssue({ code: 'custom', path: [p.key], message: p.message });
  })
  .transform(toWindow);
