/**
 * Where blob and URL inputs come from (issue 13). Blob inputs: the coordinator's node-signed input route. URL
 * inputs: the URL itself over https, fetched by the node (only for a job with network on a node that allows it),
 * following at most MAX_REDIRECTS redirects, each to https again.
 */
import type { BlobInputFile, UrlInputFile } from '@gpux/protocol';
import type { CoordinatorClient } from '../coordinator-client.js';
import { type ByteSource, DataPlaneError, TransientError } from './download.js';

export const MAX_REDIRECTS = 5;

export function blobSource(client: CoordinatorClient, attemptId: string, file: BlobInputFile): ByteSource {
  return { open: (offset, signal) => client.openInput(attemptId, file.blob, offset, signal) };
}

export function urlSource(doFetch: typeof fetch, file: UrlInputFile): ByteSource {
  return {
    async open(offset, signal) {
      let url = file.url;
      for (let hop = 0; ; hop++) {
        const res = await doFetch(url, { redirect: 'manual', signal, headers: offset > 0 ? { range: `bytes=${offset}-` } : {} });
        if (res.status >= 300 && res.status < 400 && res.status !== 304) {
          await res.body?.cancel().catch(() => {});
          const location = res.headers.get('location');
          if (!location) throw new DataPlaneError(`${describeUrl(url)} answered ${res.status} without a Location`);
          if (hop >= MAX_REDIRECTS) throw new DataPlaneError(`${describeUrl(file.url)}: more than ${MAX_REDIRECTS} redirects`);
          const next = new URL(location, url);
          if (next.protocol !== 'https:') throw new DataPlaneError(`${describeUrl(url)} redirects to ${next.protocol} (only https is followed)`);
          url = next.href;
          continue;
        }
        if (res.ok) return res;
        await res.body?.cancel().catch(() => {});
        const why = `${describeUrl(url)} answered HTTP ${res.status}`;
        if (res.status >= 500 || res.status === 408 || res.status === 429) throw new TransientError(why);
        throw new DataPlaneError(why);
      }
    },
  };
}

/** The URL without its query (it may carry a signed credential), for messages and logs. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'the URL';
  }
}
