// The device's name: `--device` (checked by its rule, agent-config-rules.ts), else the host name, which no rule sees.
import { hostname } from 'node:os';
import { deviceNameProblem } from '../core/labels.js';
import type { AgentOptionValues } from './agent-options.js';
import { UsageError } from './io.js';

/** `--device`, else the host name: checked, since it names the device's reports (`keystone/<device>`) and fleet.toml's `devices`. */
export function deviceName(values: Pick<AgentOptionValues, 'device'>): string {
  const device = values.device ?? hostname();
  const badDevice = deviceNameProblem(device);
  if (badDevice) throw new UsageError(`--device: ${badDevice}`);
  return device;
}
