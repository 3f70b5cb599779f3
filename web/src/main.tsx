// The entry: only the session check and the login form. The dashboard itself is a separate chunk that the server
// hands out to a signed-in browser only, so it is imported once a session is known.
import './styles.css';
import { render, type ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { messageOf, onSessionEnded } from './api-client.js';
import { LoginForm } from './login-form.js';
import { currentSession, type Session } from './session.js';
import type { AppProps } from './app.js';

type Phase =
  | { kind: 'checking' }
  | { kind: 'signed-out'; notice?: string; error?: string }
  | { kind: 'signed-in'; session: Session };

/** setTimeout's longest delay; a session lasts 8 hours, but a clock can say anything. */
const MAX_DELAY = 2 ** 31 - 1;

function Root() {
  const [phase, setPhase] = useState<Phase>({ kind: 'checking' });
  const [app, setApp] = useState<{ App: ComponentType<AppProps> } | { error: string } | null>(null);

  useEffect(() => {
    onSessionEnded(() => setPhase({ kind: 'signed-out', notice: 'Your session ended. Sign in again.' }));
    currentSession().then(
      (session) => setPhase(session ? { kind: 'signed-in', session } : { kind: 'signed-out' }),
      (e: unknown) => setPhase({ kind: 'signed-out', error: messageOf(e) }),
    );
  }, []);

  const signedIn = phase.kind === 'signed-in';
  useEffect(() => {
    if (!signedIn || (app && 'App' in app)) return;
    import('./app.js').then(
      (m) => setApp({ App: m.App }),
      (e: unknown) => setApp({ error: messageOf(e) }),
    );
  }, [signedIn, app]);

  // An idle page would otherwise show a session that ended at expiresAt until its next request.
  const expiresAt = phase.kind === 'signed-in' ? phase.session.expiresAt : undefined;
  useEffect(() => {
    if (!expiresAt || !Number.isFinite(Date.parse(expiresAt))) return;
    const delay = Math.min(MAX_DELAY, Math.max(0, Date.parse(expiresAt) - Date.now()) + 1000);
    const timer = setTimeout(() => {
      currentSession().then(
        (session) =>
          session
            ? setPhase({ kind: 'signed-in', session })
            : setPhase({ kind: 'signed-out', notice: 'Your session expired. Sign in again.' }),
        () => undefined,
      );
    }, delay);
    return () => clearTimeout(timer);
  }, [expiresAt]);

  if (phase.kind === 'checking') return <main class="boot" aria-busy="true" />;
  if (phase.kind === 'signed-out')
    return (
      <LoginForm
        key={phase.notice ?? phase.error ?? ''}
        notice={phase.notice}
        error={phase.error}
        onSignedIn={(session) => setPhase({ kind: 'signed-in', session })}
      />
    );
  if (app && 'error' in app)
    return (
      <main class="boot">
        <p class="error">The dashboard could not be loaded: {app.error}</p>
        <button type="button" onClick={() => location.reload()}>
          Reload
        </button>
      </main>
    );
  if (!app) return <main class="boot" aria-busy="true" />;
  return <app.App onSignedOut={() => setPhase({ kind: 'signed-out', notice: 'Signed out.' })} />;
}

const mount = document.getElementById('app');
if (mount) render(<Root />, mount);
