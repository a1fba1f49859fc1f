/** Panels for features of later issues: the real answer when the API has the route, an honest note when not. */
import type { ReactNode } from 'react';
import { api } from '../lib/api.js';
import { FEATURES, type Feature, type FeatureName, featurePath, useFeature } from '../lib/features.js';
import { usePoll } from '../lib/use-poll.js';
import { GenericData } from './generic-data.js';
import { ErrorNote } from './page.js';

export function NotYet({ feature, what }: { feature: FeatureName; what: string }) {
  const f: Feature = FEATURES[feature];
  return (
    <div className="not-yet" data-feature={feature}>
      <strong>Not available yet</strong> — arrives with {f.issue}. This coordinator's API has no route for {what} (<code>GET {f.route}</code>) yet.
      {f.meanwhile ? ` ${f.meanwhile}` : null}
    </div>
  );
}

interface OptionalProps {
  feature: FeatureName;
  /** What the panel shows, in words ("prices per GPU class"). */
  what: string;
  id?: string;
  /** A query string for the route, e.g. "?limit=20". */
  search?: string;
  render?: (data: unknown) => ReactNode;
  intervalMs?: number;
}

function Live({ feature, what, id, search = '', render, intervalMs }: OptionalProps) {
  const path = featurePath(feature, id) + search;
  const res = usePoll((signal) => api<unknown>(path, { signal }), [path], intervalMs);
  if (res.error) return <ErrorNote error={res.error} />;
  if (res.data === undefined) return <p className="muted">Loading…</p>;
  return <>{render ? render(res.data) : <GenericData data={res.data} label={what} />}</>;
}

/** The feature's data when the API offers it, else the not-yet note. */
export function Optional(props: OptionalProps) {
  const has = useFeature(props.feature);
  if (has === undefined) return <p className="muted">Checking the API…</p>;
  return has ? <Live {...props} /> : <NotYet feature={props.feature} what={props.what} />;
}
