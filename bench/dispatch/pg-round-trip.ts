/**
 * What one PostgreSQL round trip costs the client's CPU on this machine, the floor under every statement the
 * coordinator sends (bench/README, "Latest figures"): a named `select $1::int` over node-postgres, one after the
 * other on 1 and on 4 connections, over the Unix socket and over loopback TCP, on a throwaway cluster.
 *   node --import tsx bench/dispatch/pg-round-trip.ts [--queries N]
 */
import { parseArgs } from 'node:util';
import { startPostgres } from '@gpux/testing';
import pg from 'pg';

const { values } = parseArgs({ options: { queries: { type: 'string' } } });
const queries = Number(values.queries ?? 20_000);
if (!Number.isInteger(queries) || queries < 100 || queries > 1_000_000) throw new Error(`--queries takes a whole number from 100 to 1000000, got ${values.queries}`);

const server = await startPostgres();
try {
  const socketUrl = server.viaSocket?.(server.url);
  const routes: [string, string][] = [['Unix socket', socketUrl ?? ''], ['loopback TCP', server.url]];
  console.log(`PostgreSQL round trips, ${queries} per row; client CPU is this process's user + system time`);
  console.log('via           connections  wall µs/query  client CPU µs/query (user + sys)');
  for (const [via, url] of routes) {
    if (!url) {
      console.log(`${via.padEnd(13)} not available from this cluster`);
      continue;
    }
    for (const connections of [1, 4]) {
      const clients = await Promise.all(
        Array.from({ length: connections }, async () => {
          const c = new pg.Client({ connectionString: url });
          await c.connect();
          return c;
        }),
      );
      try {
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        await Promise.all(clients.map(async (c) => { for (let i = 0; i < queries / connections; i++) await c.query({ name: 'rt', text: 'select $1::int as x', values: [i] }); }));
        const wall = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        const us = (x: number) => (x / queries).toFixed(1);
        console.log(`${via.padEnd(13)} ${String(connections).padEnd(11)}  ${((1000 * wall) / queries).toFixed(1).padStart(13)}  ${us(cpu.user + cpu.system).padStart(8)} (${us(cpu.user)} + ${us(cpu.system)})`);
      } finally {
        await Promise.all(clients.map((c) => c.end()));
      }
    }
  }
} finally {
  await server.stop();
}
