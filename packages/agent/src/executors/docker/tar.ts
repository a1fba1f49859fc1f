/** A minimal ustar writer (files, dirs, symlinks): enough to hand the engine a root filesystem to import. */

export type TarEntry =
  | { type: 'file'; path: string; data: Buffer; mode?: number }
  | { type: 'dir'; path: string; mode?: number }
  | { type: 'symlink'; path: string; target: string };

const BLOCK = 512;

export function tarArchive(entries: TarEntry[], mtime = 0): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const size = e.type === 'file' ? e.data.length : 0;
    parts.push(header(e, size, mtime));
    if (e.type === 'file') {
      parts.push(e.data);
      const pad = (BLOCK - (size % BLOCK)) % BLOCK;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(BLOCK * 2)); // end of archive
  return Buffer.concat(parts);
}

function header(e: TarEntry, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const name = e.type === 'dir' && !e.path.endsWith('/') ? `${e.path}/` : e.path;
  if (Buffer.byteLength(name) > 100) throw new Error(`tar path too long for this writer: ${name}`);
  const mode = e.type === 'symlink' ? 0o777 : (e.mode ?? (e.type === 'dir' ? 0o755 : 0o644));
  h.write(name, 0, 100, 'utf8');
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0); // uid root
  octal(h, 116, 8, 0); // gid root
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h.write(' '.repeat(8), 148, 8, 'ascii'); // checksum placeholder
  h.write(e.type === 'file' ? '0' : e.type === 'dir' ? '5' : '2', 156, 1, 'ascii');
  if (e.type === 'symlink') h.write(e.target, 157, 100, 'utf8');
  h.write('ustar\u000000', 257, 8, 'ascii');
  h.write('root', 265, 32, 'ascii');
  h.write('root', 297, 32, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'ascii');
  return h;
}

function octal(buf: Buffer, offset: number, length: number, value: number): void {
  buf.write(`${value.toString(8).padStart(length - 1, '0')}\u0000`, offset, length, 'ascii');
}
