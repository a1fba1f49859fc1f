/** The frame of every page: a focusable heading (focus lands here after navigation), freshness, errors. */
import { type ReactNode, useEffect, useRef } from 'react';
import { ApiError } from '../lib/api.js';
import { timeOfDay } from '../lib/format.js';
import { takeFocusRequest } from '../lib/router.js';

/** `live: false` for a page that loads nothing (a refusal, a missing page): no "Connecting…" that never ends. */
export function Page({
  title,
  subtitle,
  actions,
  updatedAt,
  live = true,
  children,
}: { title: string; subtitle?: ReactNode; actions?: ReactNode; updatedAt?: number | undefined; live?: boolean; children: ReactNode }) {
  const h1 = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · gpux`;
  }, [title]);
  useEffect(() => {
    // After a link was followed, focus the new page's heading: keyboard and screen-reader users start at the content.
    if (takeFocusRequest()) {
      h1.current?.focus({ preventScroll: true });
      window.scrollTo(0, 0);
    }
  }, []);
  return (
    <>
      <header className="page-head">
        <div>
          <h1 ref={h1} tabIndex={-1}>
            {title}
          </h1>
          {subtitle ? <p className="page-sub">{subtitle}</p> : null}
        </div>
        <div className="page-actions">
          {actions}
          {live ? (
            <span className="live" title="This page refreshes every 2 seconds">
              <span className="live-dot" aria-hidden="true" />
              {updatedAt ? `Live · ${timeOfDay(updatedAt)}` : 'Connecting…'}
            </span>
          ) : null}
        </div>
      </header>
      {children}
    </>
  );
}

export function Section({ title, id, children, wide }: { title: string; id?: string; children: ReactNode; wide?: boolean }) {
  const hid = `${id ?? title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-h`;
  return (
    <section className={`card${wide ? ' wide' : ''}`} aria-labelledby={hid}>
      <h2 id={hid}>{title}</h2>
      {children}
    </section>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  const msg = error instanceof ApiError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return (
    <p className="error" role="alert">
      Could not load: {msg}
    </p>
  );
}
