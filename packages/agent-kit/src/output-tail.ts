// The last part of what a command wrote: a command that talks without end neither fills memory nor is stopped for it.
/** Bytes of stdout, and again of stderr, kept of one run: 16 MiB (what heat-config keeps of a hook's). */
export const OUTPUT_KEPT_BYTES = 16 * 1024 * 1024;

/** How many UTF-16 characters the UTF-8 bytes `bytes` start: one per lead byte, two for a 4-byte sequence. */
function charsStarted(bytes: Buffer): number {
  let chars = 0;
  for (const byte of bytes) if ((byte & 0xc0) !== 0x80) chars += byte >= 0xf0 ? 2 : 1;
  return chars;
}

/** The last `maxBytes` bytes written to a stream, and how many characters came before them. */
export class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;
  private droppedChars = 0;

  constructor(private readonly maxBytes = OUTPUT_KEPT_BYTES) {}

  /** Adds a chunk, dropping the oldest bytes beyond the limit. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.maxBytes) {
      const first = this.chunks[0]!;
      const cut = Math.min(first.length, this.size - this.maxBytes);
      this.droppedChars += charsStarted(first.subarray(0, cut));
      if (cut === first.length) this.chunks.shift();
      else this.chunks[0] = first.subarray(cut);
      this.size -= cut;
    }
  }

  /** The kept bytes as UTF-8 (from the first whole character), and how many characters were dropped before them. */
  result(): { text: string; cutChars: number } {
    let kept = Buffer.concat(this.chunks);
    if (this.droppedChars > 0) {
      // Bytes 10xxxxxx continue a character whose start was dropped (and counted).
      let skip = 0;
      while (skip < Math.min(kept.length, 3) && (kept[skip]! & 0xc0) === 0x80) skip += 1;
      kept = kept.subarray(skip);
    }
    return { text: kept.toString('utf8'), cutChars: this.droppedChars };
  }
}
