/** The app: who is signed in, and which page the location shows. */
import { useCallback, useEffect, useState } from 'react';
import type { WhoAmIResponse } from '@gpux/protocol';
import { type Account, Layout } from './components/layout.js';
import { Page } from './components/page.js';
import { api } from './lib/api.js';
import { Link, useLocation } from './lib/router.js';
import { clearToken, getAccount, getToken, SIGNED_OUT_EVENT, signIn } from './lib/session.js';
import { JobDetail } from './pages/job-detail.js';
import { Jobs } from './pages/jobs.js';
import { Market } from './pages/market.js';
import { NodeDetail } from './pages/node-detail.js';
import { Nodes } from './pages/nodes.js';
import { Overview } from './pages/overview.js';
import { Provider } from './pages/provider.js';
import { Regions } from './pages/regions.js';
import { SignIn } from './pages/sign-in.js';
import { Wallet } from './pages/wallet.js';

function route(path: string, account: Account) {
  const m = /^\/(nodes|jobs)\/([^/]+)$/.exec(path);
  if (m?.[1] === 'jobs') return <JobDetail id={decodeURIComponent(m[2]!)} account={account} />;
  if (m?.[1] === 'nodes') return account.role === 'operator' ? <NodeDetail id={decodeURIComponent(m[2]!)} /> : <OperatorsOnly what="Node details" />;
  switch (path) {
    case '/':
      return <Overview account={account} />;
    case '/nodes':
      return account.role === 'operator' ? <Nodes /> : <OperatorsOnly what="The node list" />;
    case '/jobs':
      return <Jobs account={account} />;
    case '/market':
      return <Market account={account} />;
    case '/wallet':
      return <Wallet />;
    case '/provider':
      return <Provider />;
    case '/regions':
      return account.role === 'operator' ? <Regions /> : <OperatorsOnly what="The regions page" />;
    default:
      return (
        <Page title="Page not found" live={false}>
          <p>
            There is no page at <code>{path}</code>. <Link to="/">Go to the overview</Link>.
          </p>
        </Page>
      );
  }
}

/** A page this account may not read: say so at once (the API would refuse it; nothing is loading). */
function OperatorsOnly({ what }: { what: string }) {
  return (
    <Page title="Operators only" live={false}>
      <p data-testid="operators-only">
        {what} is for operators of this coordinator: you are signed in with a buyer or provider token. Sign in with an operator token to see it.
      </p>
      <p>
        Your own nodes, their stake, your asks and your earnings are on the <Link to="/provider">Provider</Link> page.
      </p>
    </Page>
  );
}

export function App() {
  const { path } = useLocation();
  // A reload renders at once with the remembered account; whoami confirms it in the background.
  const [account, setAccount] = useState<Account | null>(getAccount);
  const [checking, setChecking] = useState(() => getToken() !== null && getAccount() === null);

  useEffect(() => {
    const onSignedOut = () => setAccount(null);
    window.addEventListener(SIGNED_OUT_EVENT, onSignedOut);
    const token = getToken();
    if (token) {
      api<WhoAmIResponse>('/v1/whoami')
        .then((w) => {
          const a = { accountId: w.accountId, role: w.role };
          signIn(token, a);
          setAccount(a);
        })
        .catch(() => clearToken())
        .finally(() => setChecking(false));
    }
    return () => window.removeEventListener(SIGNED_OUT_EVENT, onSignedOut);
  }, []);

  const signOut = useCallback(() => clearToken(), []);

  if (checking) return <p className="muted boot">Loading…</p>;
  if (!account) return <SignIn onSignedIn={(w) => setAccount({ accountId: w.accountId, role: w.role })} />;
  return (
    <Layout account={account} path={path} onSignOut={signOut}>
      <div key={path}>{route(path, account)}</div>
    </Layout>
  );
}
