/**
 * `gpux job verify ID [--out DIR]`: check a job's outputs against the node's signed result commitment —
 * the signature with the node's public key, then the output root digest recomputed from the bytes (the
 * files in DIR that `gpux job result --out DIR` wrote, else the inline contents). It says what was
 * checked and "verified: the outputs are what node N committed to"; never that the result is correct.
 */
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { OutputFile } from '@gpux/protocol';
import { verifyJobResult } from '@gpux/sdk';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, jsonOption } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { safeTarget } from '../job-outputs.js';
import { escapeControl, formatTable, toJson } from '../output.js';

/** The bytes of each output found under `outDir` (regular files only; no path may leave the dir). */
export function readOutputFiles(outDir: string, outputs: readonly OutputFile[]): Map<string, Uint8Array> {
  let root: string;
  try {
    root = realpathSync(resolve(outDir));
  } catch {
    throw usageError(`--out ${escapeControl(outDir)} is not a directory: pass the directory \`gpux job result ID --out DIR\` wrote`);
  }
  const files = new Map<string, Uint8Array>();
  for (const f of outputs) {
    const target = safeTarget(root, f.path);
    const st = lstatSync(target, { throwIfNoEntry: false });
    if (st?.isFile()) files.set(f.path, readFileSync(target));
  }
  return files;
}

export function registerVerify(job: Command, io: Io): void {
  jsonOption(
    connectionOptions(
      job
        .command('verify')
        .description("check a job's outputs against the signed commitment of the node that ran it (not that they are correct)")
        .argument('<id>', 'job id')
        .option('--out <dir>', 'hash the output files in this directory (written by `gpux job result --out`) instead of the inline contents'),
    ),
  ).action(async (id: string, flags: { json?: boolean; coordinator?: string; token?: string; out?: string }) => {
    if (flags.out) readOutputFiles(flags.out, []); // a missing --out dir is a usage error before any request
    const res = await clientFor(io, flags, 'buyer').jobResult(id);
    const files = flags.out ? readOutputFiles(flags.out, res.outputs) : new Map<string, Uint8Array>();
    const report = verifyJobResult(res, files);
    if (flags.json) io.out.write(toJson(report));
    else {
      io.out.write(
        formatTable(report.checks, [
          { header: 'CHECK', value: (c) => c.name },
          { header: 'OK', value: (c) => (c.ok ? 'yes' : 'NO') },
          { header: 'DETAIL', value: (c) => c.detail },
        ]),
      );
      if (report.unchecked.length > 0) io.out.write(`not hashed (bytes not available): ${report.unchecked.map(escapeControl).join(', ')}\n`);
      if (report.verified) io.out.write(`${report.summary}\n`);
    }
    if (!report.verified) throw new CliError(report.summary);
  });
}
