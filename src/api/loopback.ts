// Which names and addresses are this machine's loopback: the API's Host and Origin checks (DNS rebinding, browser
// CSRF) and the refusal to listen elsewhere without --listen-public all ask here.
import { isIP } from 'node:net';

/** `localhost`, any 127.0.0.0/8 address, `::1` (bare or in brackets). Names other than `localhost` are not trusted. */
export function isLoopbackHostname(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost') return true;
  const bare = h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

/**
 * The host name of a `Host` header (`localhost:8080` → `localhost`, `[::1]:8080` → `[::1]`), or undefined when the
 * header is not a plain host with an optional port: anything odd is refused rather than interpreted.
 */
export function hostnameOfHostHeader(header: string): string | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(header.trim());
  if (!m) return undefined;
  if (m[2] !== undefined && Number(m[2]) > 65535) return undefined;
  return m[1]!;
}

/** `http(s)://` plus a loopback name, any port, nothing else (an Origin never has a path; `null` is not loopback). */
export function isLoopbackOrigin(origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return false;
  return isLoopbackHostname(url.hostname);
}
