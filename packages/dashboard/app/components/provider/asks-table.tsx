/** A provider's asks: the least it earns per GPU-hour after the fee, per class (a class without one is paid at least the index). */
import type { AskView } from '@gpux/protocol';
import { amount, dateTime } from '../../lib/format.js';

export function AsksTable({ asks, whose }: { asks: readonly AskView[]; whose: 'your' | 'its provider’s' }) {
  if (asks.length === 0) {
    return (
      <p className="muted" data-testid="asks-none">
        No asks: {whose === 'your' ? 'your' : 'its'} nodes are paid at least the index price of their class.
        {whose === 'your' ? (
          <>
            {' '}
            Set one with <code>gpux node price set CLASS PRICE</code>.
          </>
        ) : null}
      </p>
    );
  }
  return (
    <div className="table-wrap">
      <table className="data" data-testid="asks-table">
        <caption className="sr-only">Asks per class</caption>
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col" className="num">
              Ask per GPU-hour
            </th>
            <th scope="col" className="hide-sm">
              Updated
            </th>
          </tr>
        </thead>
        <tbody>
          {asks.map((a) => (
            <tr key={a.class} data-class={a.class}>
              <th scope="row">{a.class}</th>
              <td className="num" data-minor={a.pricePerGpuHour}>
                {amount(a.pricePerGpuHour)}
              </td>
              <td className="hide-sm">{dateTime(a.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
