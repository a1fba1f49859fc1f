/**
 * Features that not every coordinator has: the market's routes (a coordinator from before the market issue
 * lacks them) and the provider status (nodes, stake, asks and pay of one provider; issue 16). Whether this coordinator has one is the API's own answer: its OpenAPI document lists the route.
 */
import { useEffect, useState } from 'react';
import { api } from './api.js';

export interface Feature {
  /** The route as the OpenAPI document writes it. */
  route: string;
  /** What brings it, for the "not available yet" note: "the market issue". */
  issue: string;
  /** Where to look meanwhile, when that is somewhere else in the dashboard. */
  meanwhile?: string;
}

export const FEATURES = {
  explain: { route: '/v1/jobs/{id}/explain', issue: 'the scheduler explain issue' },
  bill: { route: '/v1/jobs/{id}/bill', issue: 'the market issue' },
  // prices stands for the whole market (prices, history, asks): one issue brought all its routes at once.
  prices: { route: '/v1/market/prices', issue: 'the market issue' },
  treasury: { route: '/v1/treasury', issue: 'the market issue' },
  ledger: { route: '/v1/ledger', issue: 'the market issue' },
  wallet: { route: '/v1/wallet', issue: 'the market issue' },
  nodeStake: { route: '/v1/nodes/{id}/stake', issue: 'the market issue' },
  // A provider's nodes, stake, asks and pay (issue 16); operators read any provider's with ?accountId=.
  providerStatus: { route: '/v1/provider/status', issue: 'the provider status issue', meanwhile: "Its provider's earnings, job by job, are in the provider's Wallet." },
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
