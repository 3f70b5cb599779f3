// The plan format of SPEC §3 as a schema: which components a device runs, and from which recipe. Apart from plan.ts
// (which parses with it) so that the fast path can name the type it builds without an import circle.
import * as v from 'valibot';
import { minLength, strictObject } from './valid.js';
import { configTable } from './recipe-schema.js';
import { componentName } from './schema-rules.js';

const planEntry = strictObject({
  name: componentName,
  recipe: v.pipe(v.string(), minLength(1)),
  // Overrides of the recipe's [config] defaults (for a composite, one section per member). No default: see identity.
  config: v.optional(configTable),
});

export const planSchema = strictObject({
  components: v.optional(v.array(planEntry), []),
});

export type Plan = v.InferOutput<typeof planSchema>;
export type PlanEntry = Plan['components'][number];
