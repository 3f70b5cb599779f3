// The device's health in the header, as its reports carry it (SPEC §8): uptime, load, memory and disk free, the
// board's temperature. A value the device does not have (no thermal zone) is simply not shown.
import type { DeviceHealth } from '../../src/api/views.js';
import { bytes } from './format.js';

/** `3 d 4 h`, `2 h 5 min`, `7 min`: how long the device has been up, to the unit that matters. */
export function uptimeText(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min`;
}

export function DeviceHealthLine({ health }: { health: DeviceHealth }) {
  const parts: Array<[field: string, text: string, title: string]> = [];
  if (health.uptimeS !== undefined)
    parts.push(['uptime', `up ${uptimeText(health.uptimeS)}`, 'Since the device booted']);
  if (health.load1 !== undefined)
    parts.push(['load', `load ${health.load1.toFixed(2)}`, 'Load average over the last minute']);
  if (health.memFreeBytes !== undefined)
    parts.push(['mem', `${bytes(health.memFreeBytes)} memory free`, 'Memory available (MemAvailable)']);
  if (health.diskFreeBytes !== undefined)
    parts.push(['disk', `${bytes(health.diskFreeBytes)} disk free`, "Free on the state directory's file system"]);
  if (health.tempC !== undefined) parts.push(['temp', `${health.tempC.toFixed(1)} °C`, "The board's temperature"]);
  if (parts.length === 0) return null;
  return (
    <p class="device-health muted" data-field="health">
      {parts.map(([field, text, title], i) => (
        <span key={field} data-health={field} title={title}>
          {i > 0 && ' · '}
          {text}
        </span>
      ))}
    </p>
  );
}
