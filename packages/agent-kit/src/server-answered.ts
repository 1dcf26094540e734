// "The server answered": a mark in the signal outbox, `<outboxDir>/.answered-<hash of the origin>`, holding
// the time (epoch ms) an agent last got an answer from that origin. heat-config-notify writes it when a signal
// is delivered or refused, os-collect-config's hearth collector when a metadata poll is answered; a drain
// then tries at once the queued signals for that origin that last failed before it, instead of waiting out
// their backoff (up to minutes) after a control-plane outage. Written only while a signal is queued, removed
// by a drain that empties the outbox, and best effort throughout: a mark that cannot be written only leaves
// the signals to their backoff.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PREFIX = '.answered-';

/** The origin (scheme, host, port) of a URL, or the text itself when it is not a URL with one. */
export function originOf(url: string): string {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? url : origin;
  } catch {
    return url;
  }
}

function markPath(outboxDir: string, origin: string): string {
  return join(outboxDir, `${PREFIX}${createHash('sha256').update(origin).digest('hex').slice(0, 16)}`);
}

/**
 * Records that `origin` answered at `atMs`, when a signal other than `except` (an entry id: the one just
 * answered) is queued in `outboxDir`. Never throws.
 */
export function markServerAnswered(outboxDir: string, origin: string, atMs: number, except?: string): void {
  try {
    const queued = readdirSync(outboxDir).some((name) => name.endsWith('.json') && !name.startsWith('.') && name !== `${except}.json`);
    if (queued) writeFileSync(markPath(outboxDir, origin), String(atMs), { mode: 0o600 });
  } catch {
    // No outbox yet, a full or read-only disk: the backoff still retries the signals.
  }
}

/** When `origin` last answered (markServerAnswered), in epoch ms; -Infinity when never, or unreadable. */
export function serverAnsweredAt(outboxDir: string, origin: string): number {
  try {
    const text = readFileSync(markPath(outboxDir, origin), 'utf8');
    const at = text === '' ? NaN : Number(text);
    return Number.isFinite(at) ? at : -Infinity;
  } catch {
    return -Infinity;
  }
}

/** Removes every mark: with nothing queued they say nothing. Never throws. */
export function clearServerAnswered(outboxDir: string): void {
  try {
    for (const name of readdirSync(outboxDir)) if (name.startsWith(PREFIX)) unlinkSync(join(outboxDir, name));
  } catch {
    // Gone already, or a read-only disk: a mark left behind pulls an entry's next attempt forward once at most.
  }
}
