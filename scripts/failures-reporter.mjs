// A node:test reporter that writes only the failed tests, each with its file and the first lines of its
// error. scripts/run-tests.mjs runs it beside the spec reporter, into a file, and prints that file again
// after the last pass: the spec reporter's own summary of a first pass's failures scrolls far above the
// tail of a long CI log, which is often all that is kept of it.
import { relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const MAX_LINES = 40;

function describe(error) {
  // node:test wraps what the test threw in an ERR_TEST_FAILURE whose cause is the original error.
  const original = error?.code === 'ERR_TEST_FAILURE' && error.cause ? error.cause : error;
  const text = original instanceof Error ? (original.stack ?? String(original)) : String(original);
  // node's own frames say nothing about the failure.
  const lines = text.split('\n').filter((line) => !/^\s+at .*\(?node:(internal|async_hooks)/.test(line));
  const kept = lines.slice(0, MAX_LINES);
  if (lines.length > MAX_LINES) kept.push(`… (${lines.length - MAX_LINES} more lines)`);
  return kept.map((line) => `    ${line}`).join('\n');
}

export default async function* failuresReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    // A suite or a test whose subtest failed fails too; the subtest is reported on its own.
    if (details?.error?.failureType === 'subtestsFailed') continue;
    const where = file ? relative(root, file) : '(no file)';
    yield `✖ ${where}: ${name} (${Math.round(details?.duration_ms ?? 0)} ms)\n${describe(details?.error)}\n\n`;
  }
}
