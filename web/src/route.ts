// Hash routes, so that the agent serves one page for every view and a reload keeps the view.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  { view: 'overview' } | { view: 'component'; name: string } | { view: 'history' } | { view: 'missing'; hash: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/' || path === '') return { view: 'overview' };
  if (path === '/history') return { view: 'history' };
  const m = /^\/components\/(.+)$/.exec(path);
  if (m?.[1]) {
    try {
      return { view: 'component', name: decodeURIComponent(m[1]) };
    } catch {
      return { view: 'missing', hash };
    }
  }
  return { view: 'missing', hash };
}

export const componentHref = (name: string): string => `#/components/${encodeURIComponent(name)}`;

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return parseRoute(hash);
}
