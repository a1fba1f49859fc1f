/** The app's frame: skip link, top bar with the main navigation and the signed-in account, the main region. */
import type { ReactNode } from 'react';
import { Link } from '../lib/router.js';
import type { Account } from '../lib/session.js';

export type { Account };

const NAV: Array<{ to: string; label: string; operatorOnly?: boolean }> = [
  { to: '/', label: 'Overview' },
  { to: '/nodes', label: 'Nodes', operatorOnly: true },
  { to: '/jobs', label: 'Jobs' },
  { to: '/market', label: 'Market' },
  { to: '/wallet', label: 'Wallet' },
  { to: '/provider', label: 'Provider' },
  { to: '/regions', label: 'Regions', operatorOnly: true },
];

function isCurrent(to: string, path: string): boolean {
  return to === '/' ? path === '/' : path === to || path.startsWith(`${to}/`);
}

export function Layout({ account, path, onSignOut, children }: { account: Account; path: string; onSignOut: () => void; children: ReactNode }) {
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand" aria-label="gpux home">
          <svg width="22" height="22" viewBox="0 0 16 16" aria-hidden="true">
            <rect width="16" height="16" rx="3.5" className="brand-mark" />
            <path d="M4.5 4.5h7v7h-7z" fill="none" stroke="white" strokeWidth="1.5" />
            <path d="M8 2v2.5M8 11.5V14M2 8h2.5M11.5 8H14" stroke="white" strokeWidth="1.2" />
          </svg>
          <span>gpux</span>
        </Link>
        <nav aria-label="Main">
          <ul>
            {NAV.filter((n) => !n.operatorOnly || account.role === 'operator').map((n) => (
              <li key={n.to}>
                <Link to={n.to} aria-current={isCurrent(n.to, path) ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="account">
          <span className={`role role-${account.role}`} title={`Account ${account.accountId}`}>
            {account.role}
          </span>
          <button type="button" className="btn-quiet" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
