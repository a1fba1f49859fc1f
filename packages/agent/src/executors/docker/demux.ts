/** Splits the engine's multiplexed attach stream (8-byte frame headers, no TTY) into stdout and stderr text. */
import { StringDecoder } from 'node:string_decoder';
import type { LogStream } from '@gpux/protocol';

export class StreamDemuxer {
  private pending: Buffer = Buffer.alloc(0);
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };

  constructor(private readonly emit: (stream: LogStream, text: string) => void) {}

  /** Feed raw bytes; frames may arrive split at any byte. */
  write(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 8) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) break;
      const type = this.pending[0];
      const payload = this.pending.subarray(8, 8 + size);
      this.pending = this.pending.subarray(8 + size);
      // 1 stdout, 2 stderr (0 would be stdin, which we never attach)
      const stream = type === 2 ? 'stderr' : 'stdout';
      this.out(stream, this.decoders[stream].write(payload));
    }
  }

  /** Flushes half-decoded characters at the end of the stream. */
  end(): void {
    this.out('stdout', this.decoders.stdout.end());
    this.out('stderr', this.decoders.stderr.end());
  }

  private out(stream: 'stdout' | 'stderr', text: string): void {
    if (text.length > 0) this.emit(stream, text);
  }
}
