/**
 * `gpux blob put|get|ls|rm` (issue 13): content-addressed blobs on the coordinator. put streams a file up in
 * chunks (resuming after a cut) and prints its sha256; get streams it down to a file and checks the sha256.
 */
import { resolve } from 'node:path';
import type { BlobView } from '@gpux/protocol';
import { blobsOf } from '@gpux/sdk';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { type Column, formatBytes, formatTable, formatTime, outputOption, toJson, writeData } from '../output.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

const SHA256 = /^[0-9a-f]{64}$/;

function checkSha(sha256: string): string {
  if (!SHA256.test(sha256)) throw usageError(`"${sha256}" is not a blob: a blob is named by its sha256, 64 lowercase hex characters (as \`gpux blob put\` prints)`);
  return sha256;
}

export function formatBlobs(blobs: readonly BlobView[]): string {
  if (blobs.length === 0) return 'no blobs\n';
  const columns: Column<BlobView>[] = [
    { header: 'SHA256', value: (b) => b.sha256 },
    { header: 'SIZE', value: (b) => formatBytes(b.size), align: 'right' },
    { header: 'CREATED', value: (b) => formatTime(b.createdAt) },
    { header: 'EXPIRES', value: (b) => formatTime(b.expiresAt) },
  ];
  return formatTable(blobs, columns);
}

export function registerBlob(program: Command, io: Io): void {
  const blob = program.command('blob').description('content-addressed blobs on the coordinator: put, get, ls, rm');

  jsonOption(connectionOptions(blob.command('put').description('upload a file (in chunks, resumed after a cut); prints its sha256').argument('<file>', 'the file to upload'))).action(
    async (file: string, flags: Flags) => {
      const view = await blobsOf(clientFor(io, flags, 'buyer')).uploadFile(resolve(file));
      io.out.write(flags.json ? toJson(view) : `${view.sha256}\n`);
    },
  );

  jsonOption(
    connectionOptions(
      blob
        .command('get')
        .description('download a blob to a file (its sha256 checked before the file appears)')
        .argument('<sha256>', 'the blob')
        .requiredOption('-o, --output <file>', 'where to write it'),
    ),
  ).action(async (sha256: string, flags: Flags & { output: string }) => {
    const got = await blobsOf(clientFor(io, flags, 'buyer')).downloadToFile(checkSha(sha256), resolve(flags.output));
    io.out.write(flags.json ? toJson({ ...got, file: resolve(flags.output) }) : `${formatBytes(got.size)} written to ${flags.output}\n`);
  });

  outputOption(
    connectionOptions(
      blob
        .command('ls')
        .description('your blobs, with your usage and quota')
        .option('--limit <n>', 'at most this many (1-1000)', intArg('--limit', 1, 1000), 100)
        .option('--cursor <cursor>', 'the next page (as printed)'),
    ),
  ).action(async (flags: Flags & { limit: number; cursor?: string }) => {
    const res = await blobsOf(clientFor(io, flags, 'buyer')).list({ limit: flags.limit, ...(flags.cursor ? { cursor: flags.cursor } : {}) });
    if (writeData(io, flags, res)) return;
    const u = res.usage;
    io.out.write(formatBlobs(res.blobs));
    io.out.write(`used ${formatBytes(u.blobBytes + u.reservedBytes)} of ${formatBytes(u.quotaBytes)} (${u.openUploads} open uploads reserve ${formatBytes(u.reservedBytes)})\n`);
    if (res.nextCursor) io.out.write(`more: gpux blob ls --cursor ${res.nextCursor}\n`);
  });

  jsonOption(connectionOptions(blob.command('rm').description('stop holding a blob (frees quota)').argument('<sha256>', 'the blob'))).action(async (sha256: string, flags: Flags) => {
    const res = await blobsOf(clientFor(io, flags, 'buyer')).delete(checkSha(sha256));
    io.out.write(flags.json ? toJson(res) : res.deleted ? `removed ${sha256}\n` : `you hold no blob ${sha256}\n`);
  });
}
