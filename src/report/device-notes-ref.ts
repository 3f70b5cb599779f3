// Which notes ref holds a device's commit statuses (SPEC §8: a device writes only refs no other device writes).
//
// Each device has its own notes ref, refs/notes/keystone-devices/<device>, written by that device alone, so no two
// devices ever race for a ref. Why not refs/notes/keystone/<device>: Git stores refs as paths, and a ref
// `refs/notes/keystone` (the shared ref every earlier agent wrote, still on upgraded servers, and still written by
// devices not upgraded yet) forbids any ref below `refs/notes/keystone/` in the same repository (the server answers
// "failed to update ref"), and the other way round. A sibling name avoids that on every server, whatever it already
// holds, and one glob still covers both: `git log --notes='keystone*'`.
//
// The device name becomes one ref component by percent-encoding (UTF-8 bytes, `%XX` upper-case) every character
// outside [A-Za-z0-9._-], `%` itself included, plus each `.` that `git check-ref-format` would refuse where it stands
// (first, last, after another `.`, or starting a final `.lock`). Decoding is plain percent-decoding, so two different
// names never share a ref, and a `/` in a name is encoded too: no device's ref can be a directory of another's.
import { StatusDeliveryError } from './commit-status.js';

/** The shared notes ref of earlier agents: read for history, no longer written. */
export const LEGACY_NOTES_REF = 'refs/notes/keystone';
/** Per-device notes refs live under this prefix. */
export const DEVICE_NOTES_PREFIX = 'refs/notes/keystone-devices/';
const CONTEXT_PREFIX = 'keystone/';

function encodeChar(ch: string): string {
  return [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/** The ref-safe, reversible encoding of a device name as one ref component. */
export function encodeDeviceName(device: string): string {
  if (device === '') throw new StatusDeliveryError('KS_STATUS_INVALID', 'commit status: the device name is empty');
  const chars = [...device];
  const lockAt = device.endsWith('.lock') ? chars.length - 5 : -1;
  return chars
    .map((ch, i) => {
      if (/^[A-Za-z0-9_-]$/.test(ch)) return ch;
      if (ch === '.' && i !== 0 && i !== chars.length - 1 && chars[i - 1] !== '.' && i !== lockAt) return ch;
      return encodeChar(ch);
    })
    .join('');
}

export function decodeDeviceName(component: string): string {
  return decodeURIComponent(component);
}

/** refs/notes/keystone-devices/<encoded device> */
export function deviceNotesRef(device: string): string {
  return `${DEVICE_NOTES_PREFIX}${encodeDeviceName(device)}`;
}

/** The device a per-device notes ref belongs to; undefined for any other ref. */
export function deviceOfNotesRef(ref: string): string | undefined {
  if (!ref.startsWith(DEVICE_NOTES_PREFIX)) return undefined;
  const rest = ref.slice(DEVICE_NOTES_PREFIX.length);
  if (rest === '' || rest.includes('/')) return undefined;
  let device: string;
  try {
    device = decodeDeviceName(rest);
  } catch {
    return undefined; // not one of ours (a stray `%`)
  }
  // Only the one encoding a device writes: `edge%2D7` must not pass for edge-7's own ref and outvote it. And only a
  // name a device can have (one printable word): a ref is anyone's to push, its name reaches terminals and PR comments.
  if (encodeDeviceName(device) !== rest || !/^[^\s\p{Cc}]{1,253}$/u.test(device)) return undefined;
  return device;
}

/** The device of a status context `keystone/<device>`; the notes reporter files each status under it. */
export function deviceOfContext(context: string): string {
  const device = context.startsWith(CONTEXT_PREFIX) ? context.slice(CONTEXT_PREFIX.length) : '';
  if (device === '')
    throw new StatusDeliveryError(
      'KS_STATUS_INVALID',
      `commit status: the Git notes reporter needs the context keystone/<device>, got ${JSON.stringify(context)}`,
    );
  return device;
}
