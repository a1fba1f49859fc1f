/** Live data by polling: load now, then every interval (paused while the tab is hidden); aborts on unmount. */
import { useEffect, useRef, useState } from 'react';
import { isAbort } from './api.js';

/** How often pages refresh. Polling, not server-sent events: the API has no event stream yet. */
export const POLL_MS = 2000;

export interface Polled<T> {
  data: T | undefined;
  error: unknown;
  /** When the last successful load finished (epoch ms). */
  updatedAt: number | undefined;
  /** Load again now (after an action such as cancel). */
  refresh(): void;
}

export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[], intervalMs = POLL_MS): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; updatedAt: number | undefined }>({ data: undefined, error: undefined, updatedAt: undefined });
  const kick = useRef<() => void>(() => {});
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    setState((s) => ({ ...s, data: undefined, error: undefined, updatedAt: undefined }));
    const tick = async () => {
      clearTimeout(timer);
      if (running || ctrl.signal.aborted) return;
      running = true;
      if (!document.hidden) {
        try {
          const data = await loadRef.current(ctrl.signal);
          if (!ctrl.signal.aborted) setState({ data, error: undefined, updatedAt: Date.now() });
        } catch (error) {
          if (!isAbort(error) && !ctrl.signal.aborted) setState((s) => ({ ...s, error }));
        }
      }
      running = false;
      if (!ctrl.signal.aborted) timer = setTimeout(tick, intervalMs);
    };
    kick.current = () => void tick();
    const onVisible = () => {
      if (!document.hidden) void tick();
    };
    document.addEventListener('visibilitychange', onVisible);
    void tick();
    return () => {
      ctrl.abort();
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [...deps, intervalMs]);

  return { ...state, refresh: () => kick.current() };
}
