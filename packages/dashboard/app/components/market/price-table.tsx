/** The index price per market class, as GET /v1/market/prices gives it: price, change, utilization, supply, demand, floor. */
import type { ClassPrice, MarketPricesResponse } from '@gpux/protocol';
import { amount, bps, duration, num, signedBps } from '../../lib/format.js';

const every = (ms: number): string => (ms % 60_000 === 0 ? `${ms / 60_000} min` : duration(ms));

/** A change with its sign in words; the color and the arrow (drawn by CSS) only repeat it. */
export function Change({ value, label }: { value: number; label: string }) {
  const dir = value > 0 ? 'up' : value < 0 ? 'down' : 'flat';
  return (
    <span className={`change change-${dir}`} title={`${signedBps(value)} ${label}`}>
      {signedBps(value)}
    </span>
  );
}

function Row({ c, target }: { c: ClassPrice; target: number }) {
  const busy = c.utilizationBps > target ? 'over' : 'under';
  return (
    <tr data-class={c.class} data-epoch={c.epoch}>
      <th scope="row">{c.class}</th>
      <td className="num" data-field="price" data-minor={c.price}>
        {amount(c.price)}
      </td>
      <td className="num" data-field="change">
        <Change value={c.changeBps} label="since the last epoch" />
      </td>
      <td className="num hide-sm" data-field="change24h">
        <Change value={c.change24hBps} label="over 24 hours" />
      </td>
      <td className={`num util-${busy}`} data-field="utilization" title={`${busy} the target of ${bps(target)}`}>
        {bps(c.utilizationBps)}
      </td>
      <td className="num hide-sm" data-field="supply">
        {num(c.supplyUnits)}
      </td>
      <td className="num hide-sm" data-field="demand">
        {num(c.demandUnits)}
      </td>
      <td className="num hide-md" data-field="floor" data-minor={c.floor}>
        {amount(c.floor)}
      </td>
    </tr>
  );
}

const noPrices = <p className="muted">No prices yet: the index is set at the first epoch after nodes join.</p>;

export function PriceTable({ data }: { data: MarketPricesResponse }) {
  if (data.classes.length === 0) return noPrices;
  const asset = data.classes[0]!.asset.toUpperCase();
  const target = data.targetUtilizationBps;
  return (
    <>
      <div className="table-wrap">
        <table data-testid="price-table">
          <caption className="sr-only">Index price per GPU-hour per class, in {asset}</caption>
          <thead>
            <tr>
              <th scope="col">Class</th>
              <th scope="col" className="num">
                {asset} / GPU-hour
              </th>
              <th scope="col" className="num">
                Change <span className="th-sub">last epoch</span>
              </th>
              <th scope="col" className="num hide-sm">
                Change <span className="th-sub">24 h</span>
              </th>
              <th scope="col" className="num">
                Utilization <span className="th-sub">target {bps(target)}</span>
              </th>
              <th scope="col" className="num hide-sm">
                Supply
              </th>
              <th scope="col" className="num hide-sm">
                Demand
              </th>
              <th scope="col" className="num hide-md">
                Floor
              </th>
            </tr>
          </thead>
          <tbody>
            {data.classes.map((c) => (
              <Row key={c.class} c={c} target={target} />
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted small table-note">
        Prices move every {every(data.epochMs)} with demand (GPUs busy and wanted by queued jobs) over supply, in GPU units; the cpu class is priced per job-hour. The
        treasury keeps {bps(data.feeBps)} of each charge.
      </p>
    </>
  );
}

/** The overview's short form, narrow enough for a third of the page: class, and the price with its last change. */
export function PriceSummary({ data }: { data: MarketPricesResponse }) {
  if (data.classes.length === 0) return noPrices;
  return (
    <div className="table-wrap">
      <table data-testid="price-summary">
        <caption className="sr-only">Index price per GPU-hour per class, with the change since the last epoch</caption>
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col" className="num">
              {data.classes[0]!.asset.toUpperCase()} / GPU-hour
            </th>
          </tr>
        </thead>
        <tbody>
          {data.classes.map((c) => (
            <tr key={c.class} data-class={c.class}>
              <th scope="row" className="break">
                {c.class}
              </th>
              <td className="num" data-minor={c.price}>
                {amount(c.price)}
                <span className="cell-sub">
                  <Change value={c.changeBps} label="since the last epoch" />
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
