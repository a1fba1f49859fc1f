/**
 * Features that arrive with later issues (market, trust, scheduler explain). Whether this coordinator has
 * one is the API's own answer: its OpenAPI document lists a route for it, or it does not.
 */
import { useEffect, useState } from 'react';
import { api } from './api.js';

export interface Feature {
  /** The route as the OpenAPI document writes it. */
  route: string;
  /** The issue that brings it, for the "not available yet" note. */
  issue: string;
}

export const FEATURES = {
  explain: { route: '/v1/jobs/{id}/explain', issue: 'scheduler explain' },
  bill: { route: '/v1/jobs/{id}/bill', issue: 'market' },
  prices: { route: '/v1/market/prices', issue: 'market' },
  priceHistory: { route: '/v1/market/history', issue: 'market' },
  treasury: { route: '/v1/treasury', issue: 'market' },
  ledger: { route: '/v1/ledger', issue: 'market' },
  nodeTrust: { route: '/v1/nodes/{id}/trust', issue: 'trust' },
  nodeEarnings: { route: '/v1/nodes/{id}/earnings', issue: 'market' },
} satisfies Record<string, Feature>;
export type FeatureName = keyof typeof FEATURES;

let paths: Promise<Set<string>> | undefined;

/** The API's GET routes, read once per page load (the document is public and cached by the browser). */
function loadPaths(): Promise<Set<string>> {
  paths ??= api<{ paths?: Record<string, Record<string, unknown>> }>('/v1/openapi.json')
    .then((doc) => new Set(Object.entries(doc.paths ?? {}).flatMap(([p, ops]) => ('get' in ops ? [p] : []))))
    .catch((e: unknown) => {
      paths = undefined;
      throw e;
    });
  return paths;
}

/** undefined while loading; then whether the API offers the feature. */
export function useFeature(name: FeatureName): boolean | undefined {
  const [has, setHas] = useState<boolean | undefined>(undefined);
  useEffect(() => {
    let live = true;
    loadPaths().then(
      (p) => live && setHas(p.has(FEATURES[name].route)),
      () => live && setHas(false),
    );
    return () => {
      live = false;
    };
  }, [name]);
  return has;
}

/** The route with its `{id}` filled in. */
export function featurePath(name: FeatureName, id = ''): string {
  return FEATURES[name].route.replace('{id}', encodeURIComponent(id));
}
