// The schema rules for what fleet.toml says about devices — a device name, a label selector — shared by its targets
// and its rollout waves, so both refuse the same things with the same codes.
import * as v from 'valibot';
import { record, refine } from './valid.js';
import { CODES } from './errors.js';
import { deviceNameProblem, labelKeyProblem, labelValueProblem, LABEL_KEY_HINT, LABEL_VALUE_HINT } from './labels.js';
import { KS_CODE } from './schema-rules.js';

/** A device name as a fleet file may list it: what `--device` takes (a hostname, usually), one printable word. */
export const deviceNameField = v.pipe(
  v.string(),
  refine<string>((t, ctx) => {
    if (deviceNameProblem(t))
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(t)} is not a device name`,
        params: {
          [KS_CODE]: CODES.BAD_NAME,
          hint: 'one word of at most 253 characters, no spaces or control characters',
        },
      });
  }),
);

/** Labels a device must all have, equal; {} matches every device. */
export const labelSelector = v.pipe(
  record(v.string(), v.string()),
  refine<Record<string, string>>((labels, ctx) => {
    for (const [k, value] of Object.entries(labels)) {
      const keyProblem = labelKeyProblem(k);
      const problem = keyProblem ?? labelValueProblem(value);
      if (problem)
        ctx.addIssue({
          code: 'custom',
          path: [k],
          message: problem,
          params: { [KS_CODE]: CODES.BAD_LABEL, hint: keyProblem ? LABEL_KEY_HINT : LABEL_VALUE_HINT },
        });
    }
  }),
);
