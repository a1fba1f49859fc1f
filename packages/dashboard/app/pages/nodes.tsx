/** Nodes (operators): a live table with search and filters by class, state, region and kind. */
import { useState } from 'react';
import type { NodeView } from '@gpux/protocol';
import { StateBadge } from '../components/bits.js';
import { provenLabel } from '../components/proof.js';
import { ErrorNote, Page } from '../components/page.js';
import { ago, num, shortId } from '../lib/format.js';
import { gpuSummary, loadAllNodes, nodeState } from '../lib/nodes.js';
import { Link } from '../lib/router.js';
import { usePoll } from '../lib/use-poll.js';

interface Filters {
  text: string;
  gpuClass: string;
  state: string;
  region: string;
  kind: string;
}

const NO_FILTERS: Filters = { text: '', gpuClass: '', state: '', region: '', kind: '' };
const STATES = ['online', 'offline', 'cordoned', 'draining'];

function matches(n: NodeView, f: Filters): boolean {
  const t = f.text.trim().toLowerCase();
  if (t && !n.id.toLowerCase().includes(t) && !n.advertisement.hostname.toLowerCase().includes(t)) return false;
  if (f.gpuClass && !n.advertisement.gpus.some((g) => g.model === f.gpuClass)) return false;
  if (f.state && nodeState(n) !== f.state) return false;
  if (f.region && (n.advertisement.region ?? '') !== (f.region === '(none)' ? '' : f.region)) return false;
  if (f.kind && (f.kind === 'simulated') !== n.simulated) return false;
  return true;
}

function Select({ id, label, value, options, onChange, all }: { id: string; label: string; value: string; options: string[]; onChange: (v: string) => void; all: string }) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{all}</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </div>
  );
}

export function Nodes() {
  const res = usePoll((signal) => loadAllNodes(signal), []);
  const [f, setF] = useState<Filters>(NO_FILTERS);
  const set = (k: keyof Filters) => (v: string) => setF((prev) => ({ ...prev, [k]: v }));
  const all = res.data?.nodes ?? [];
  const classes = [...new Set(all.flatMap((n) => n.advertisement.gpus.map((g) => g.model)))].sort();
  const regions = [...new Set(all.map((n) => n.advertisement.region ?? '(none)'))].sort();
  const rows = all.filter((n) => matches(n, f));
  const now = res.updatedAt ?? Date.now();

  return (
    <Page title="Nodes" subtitle="Providers’ machines: what they advertise and what they are doing now." updatedAt={res.updatedAt}>
      <search className="filters" aria-label="Filter nodes">
        <div className="field grow">
          <label htmlFor="node-search">Search</label>
          <input id="node-search" type="search" placeholder="Node id or hostname" value={f.text} onChange={(e) => set('text')(e.target.value)} />
        </div>
        <Select id="node-class" label="GPU class" value={f.gpuClass} options={classes} onChange={set('gpuClass')} all="All classes" />
        <Select id="node-state" label="State" value={f.state} options={STATES} onChange={set('state')} all="All states" />
        <Select id="node-region" label="Region" value={f.region} options={regions} onChange={set('region')} all="All regions" />
        <Select id="node-kind" label="Kind" value={f.kind} options={['real', 'simulated']} onChange={set('kind')} all="Real and simulated" />
      </search>
      {res.error ? <ErrorNote error={res.error} /> : null}
      <div className="card flush">
        <div className="table-wrap">
          <table className="data" data-testid="nodes-table">
            <caption>
              {res.data ? `${num(rows.length)} of ${num(all.length)} node${all.length === 1 ? '' : 's'}${res.data.more ? ' (the first 5,000 loaded)' : ''}` : 'Loading nodes…'}
            </caption>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">State</th>
                <th scope="col">GPUs</th>
                <th scope="col" className="num">
                  Busy
                </th>
                <th scope="col" className="hide-sm">
                  Proven
                </th>
                <th scope="col" className="hide-sm">
                  Region
                </th>
                <th scope="col" className="hide-sm">
                  Kind
                </th>
                <th scope="col" className="hide-md">
                  Last heartbeat
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((n) => (
                <tr key={n.id} data-node-id={n.id}>
                  <th scope="row">
                    <Link to={`/nodes/${encodeURIComponent(n.id)}`} title={n.id}>
                      {n.advertisement.hostname}
                    </Link>
                    <span className="id id-line">{shortId(n.id, 18)}</span>
                  </th>
                  <td>
                    <StateBadge state={nodeState(n)} />
                  </td>
                  <td>{gpuSummary(n)}</td>
                  <td className="num">{n.gpusTotal ? `${n.gpusBusy} / ${n.gpusTotal}` : `${n.activeAttempts} job${n.activeAttempts === 1 ? '' : 's'}`}</td>
                  <td className="hide-sm" data-testid="node-proven" title={n.proof?.reason ?? undefined}>
                    {provenLabel(n)}
                    {n.proof?.state === 'proven' && n.proof.score !== null ? <span className="muted small">{` ${n.proof.score.toFixed(2)}×`}</span> : null}
                  </td>
                  <td className="hide-sm">{n.advertisement.region ?? '—'}</td>
                  <td className="hide-sm">{n.simulated ? 'simulated' : 'real'}</td>
                  <td className="hide-md">{ago(n.lastHeartbeatAt, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {res.data && rows.length === 0 ? <p className="empty-note">{all.length ? 'No node matches these filters.' : 'No node has registered yet. Start one with `gpux node start`.'}</p> : null}
      </div>
    </Page>
  );
}
