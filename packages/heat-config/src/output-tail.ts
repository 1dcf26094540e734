// What heat-config keeps of a hook's stdout or stderr: the last bytes only. A hook that writes without end
// (a verbose tool in a loop, `yes`) would otherwise fill memory, or pass what a string can hold (512 MiB) and
// fail the deployment in heat-config itself, to be run again on every later run. The signal keeps at most
// 1 MiB anyway (heat-config-notify trims it), and the end of an output is what says why a hook failed.

/** Bytes of stdout, and again of stderr, that heat-config keeps of one hook run: 16 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** The last `maxBytes` bytes written to a stream, and how many came before them. */
export class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes dropped from the front so far. */
  dropped = 0;

  constructor(private readonly maxBytes: number) {}

  /** Adds a chunk, dropping the oldest bytes beyond the limit. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.maxBytes) {
      const first = this.chunks[0]!;
      const excess = this.size - this.maxBytes;
      const cut = Math.min(first.length, excess);
      if (cut === first.length) this.chunks.shift();
      else this.chunks[0] = first.subarray(cut);
      this.size -= cut;
      this.dropped += cut;
    }
  }

  /**
   * The kept bytes as UTF-8 (invalid bytes become U+FFFD). When bytes were dropped, a first line says how
   * many, so the text is never taken for the hook's JSON result.
   */
  text(stream: 'stdout' | 'stderr'): string {
    let kept = Buffer.concat(this.chunks);
    if (this.dropped === 0) return kept.toString('utf8');
    // Bytes 10xxxxxx continue a character whose start was dropped: dropped too (counted), not shown as U+FFFD.
    let skip = 0;
    while (skip < Math.min(kept.length, 3) && (kept[skip]! & 0xc0) === 0x80) skip += 1;
    kept = kept.subarray(skip);
    const dropped = this.dropped + skip;
    return `[heat-config: the first ${dropped} bytes of the hook's ${stream} were dropped; it wrote more than ${this.maxBytes} bytes]\n${kept.toString('utf8')}`;
  }
}
