/**
 * Free text an agent sends (a reason, a signal id, a heartbeat message) goes into plain text
 * columns, and PostgreSQL cannot store a NUL in one. So that a signal is never refused for it, and
 * every store keeps the same text, a NUL there is written as the six characters `\u0000`, as JSON
 * shows it. Values stored as JSON (outputs, data) keep their NUL exactly.
 */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\\u0000') : text;
}
