/** A small history-API router: the current location, navigate(), and <Link> that stays a real link. */
import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from 'react';

const NAVIGATE_EVENT = 'gpux:navigate';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange);
  window.addEventListener(NAVIGATE_EVENT, onChange);
  return () => {
    window.removeEventListener('popstate', onChange);
    window.removeEventListener(NAVIGATE_EVENT, onChange);
  };
}

const snapshot = () => window.location.pathname + window.location.search;

/** The path and query, e.g. "/jobs?state=running". */
export function useLocation(): { path: string; search: URLSearchParams } {
  const loc = useSyncExternalStore(subscribe, snapshot);
  const i = loc.indexOf('?');
  return { path: i < 0 ? loc : loc.slice(0, i), search: new URLSearchParams(i < 0 ? '' : loc.slice(i)) };
}

let focusPending = false;

/** True once after navigate(): the new page moves focus to its heading (not on first load or back/forward). */
export function takeFocusRequest(): boolean {
  const f = focusPending;
  focusPending = false;
  return f;
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  focusPending = !opts.replace;
  if (opts.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  window.dispatchEvent(new Event(NAVIGATE_EVENT));
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string };

/** A plain <a href>: keyboard, middle-click and "open in new tab" work; a plain click navigates in place. */
export function Link({ to, onClick, ...rest }: LinkProps) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={click} {...rest} />;
}
