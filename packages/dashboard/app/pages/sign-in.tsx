/** Sign in with a gpux token: checked with GET /v1/whoami, then kept in sessionStorage for this tab. */
import { type FormEvent, useEffect, useRef, useState } from 'react';
import type { WhoAmIResponse } from '@gpux/protocol';
import { ApiError, api } from '../lib/api.js';
import { signIn } from '../lib/session.js';
import { clearTextTokenRisk } from '../lib/transport-safety.js';

export function SignIn({ onSignedIn }: { onSignedIn: (who: WhoAmIResponse) => void }) {
  const [token, setTokenText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Plain HTTP off loopback: the token would travel in clear, so signing in takes an explicit acknowledgement.
  const [risk] = useState(() => clearTextTokenRisk(window.location));
  const [acceptedRisk, setAcceptedRisk] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    document.title = 'Sign in · gpux';
    input.current?.focus();
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) return setError('Paste a token first.');
    if (risk && !acceptedRisk) return setError('Tick the box to send the token over plain HTTP, or open this page over HTTPS.');
    setBusy(true);
    setError(null);
    try {
      const who = await api<WhoAmIResponse>('/v1/whoami', { token: t });
      signIn(t, { accountId: who.accountId, role: who.role });
      onSignedIn(who);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'This token is not valid on this coordinator.' : `Could not sign in: ${(err as Error).message}`);
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="signin">
      <form className="card signin-card" onSubmit={submit} aria-labelledby="signin-h">
        <div className="brand brand-dark" aria-hidden="true">
          <span>gpux</span>
        </div>
        <h1 id="signin-h">Sign in</h1>
        <p className="muted">Buyers see their own jobs; operators see the whole network.</p>
        <label htmlFor="token">API token</label>
        <input
          ref={input}
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder="gpux_…"
          value={token}
          onChange={(e) => setTokenText(e.target.value)}
          aria-describedby="token-help"
          aria-invalid={error ? true : undefined}
        />
        <p id="token-help" className="hint">
          <code>gpux dev</code> prints an operator and a buyer token. The token stays in this tab only.
        </p>
        {risk ? (
          <div className="warning" role="note" data-testid="cleartext-warning">
            <p>{risk}</p>
            <label className="check">
              <input type="checkbox" checked={acceptedRisk} onChange={(e) => setAcceptedRisk(e.target.checked)} />I understand: send my token in clear anyway
            </label>
          </div>
        ) : null}
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" className="btn" disabled={busy || (risk !== null && !acceptedRisk)}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
