/** A small trend line in SVG that fills its box; its accessible name says what it shows and the latest, lowest and highest values. */

export function Sparkline({ values, label, height = 32, width = '100%', unit = '' }: { values: number[]; label: string; height?: number; width?: number | string; unit?: string }) {
  const name = values.length
    ? `${label}: latest ${values[values.length - 1]}${unit}, low ${Math.min(...values)}${unit}, high ${Math.max(...values)}${unit} over ${values.length} readings`
    : `${label}: no readings yet`;
  // Drawn in a 100-wide box stretched to the available width; strokes keep their width (non-scaling-stroke).
  const W = 100;
  if (values.length < 2) {
    return (
      <svg className="sparkline" style={{ width }} height={height} viewBox={`0 0 ${W} ${height}`} preserveAspectRatio="none" role="img" aria-label={name}>
        <line x1="0" x2={W} y1={height - 1} y2={height - 1} className="spark-base" vectorEffect="non-scaling-stroke" />
      </svg>
    );
  }
  const max = Math.max(...values);
  const min = Math.min(0, ...values);
  const span = max - min || 1;
  const pad = 2;
  const x = (i: number) => (i / (values.length - 1)) * W;
  const y = (v: number) => height - pad - ((v - min) / span) * (height - 2 * pad);
  const points = values.map((v, i) => `${x(i).toFixed(2)},${y(v).toFixed(1)}`).join(' ');
  return (
    <svg className="sparkline" style={{ width }} height={height} viewBox={`0 0 ${W} ${height}`} preserveAspectRatio="none" role="img" aria-label={name}>
      <polygon className="spark-area" points={`0,${height} ${points} ${W},${height}`} />
      <polyline className="spark-line" points={points} vectorEffect="non-scaling-stroke" />
    </svg>
  );
}
