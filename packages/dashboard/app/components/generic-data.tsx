/** Shows an API answer this dashboard has no dedicated view for yet, as labelled values: real data, plainly. */

function scalar(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function GenericData({ data, label }: { data: unknown; label: string }) {
  if (Array.isArray(data)) {
    const rows = data.slice(0, 50) as unknown[];
    const cols = [...new Set(rows.flatMap((r) => (r && typeof r === 'object' ? Object.keys(r) : [])))].slice(0, 8);
    if (cols.length === 0) return <p>{rows.map(scalar).join(', ') || 'None.'}</p>;
    return (
      <div className="table-wrap">
        <table>
          <caption className="sr-only">{label}</caption>
          <thead>
            <tr>
              {cols.map((c) => (
                <th key={c} scope="col">
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: rows of an unknown shape have no id
              <tr key={i}>
                {cols.map((c) => (
                  <td key={c}>{scalar((r as Record<string, unknown>)[c])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    );
  }
  if (data && typeof data === 'object') {
    return (
      <dl className="facts" aria-label={label}>
        {Object.entries(data as Record<string, unknown>).map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{Array.isArray(v) || (v && typeof v === 'object') ? <GenericData data={v} label={k} /> : scalar(v)}</dd>
          </div>
        ))}
      </dl>
    );
  }
  return <p>{scalar(data)}</p>;
}
