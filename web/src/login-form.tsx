// Shown whenever there is no session. The token goes straight into the exchange and the field is emptied after it,
// so it never lives in page state or storage.
import { useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from './api-client.js';
import { signIn, type Session } from './session.js';

interface Props {
  onSignedIn(session: Session): void;
  /** Why the form is back (the session ended), or why the page could not tell (the agent is unreachable). */
  notice?: string | undefined;
  error?: string | undefined;
}

export function LoginForm({ onSignedIn, notice, error: initialError }: Props) {
  const [error, setError] = useState(initialError);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    document.title = 'Sign in · Keystone';
    input.current?.focus();
  }, []);

  async function submit(e: Event) {
    e.preventDefault();
    const field = input.current;
    if (!field || busy) return;
    const token = field.value.trim();
    field.value = '';
    if (!token) {
      setError('Enter the API token.');
      field.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await signIn(token));
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
      field.focus();
    }
  }

  return (
    <main class="login">
      <div class="login-card">
        <p class="brand">
          <span class="brand-mark" aria-hidden="true" />
          Keystone
        </p>
        <h1>Sign in</h1>
        {notice && <p class="notice">{notice}</p>}
        <form id="login" onSubmit={submit}>
          <label for="token">API token</label>
          <input
            ref={input}
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            aria-label="API token"
            spellcheck={false}
            required
            aria-describedby="token-help"
          />
          <button type="submit" class="primary" aria-busy={busy}>
            Sign in
          </button>
          {error && (
            <p role="alert" class="error">
              {error}
            </p>
          )}
        </form>
        <p id="token-help" class="help">
          The token is in <code>&lt;state-dir&gt;/api-token</code> on the device:{' '}
          <code>/var/lib/keystone/api-token</code> on an installed device, <code>.state/api-token</code> under{' '}
          <code>npm start</code> (<code>cat .state/api-token</code>).
        </p>
      </div>
    </main>
  );
}
