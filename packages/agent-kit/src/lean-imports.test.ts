import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const sourceDir = new URL('./', import.meta.url);

test('agent-kit loads only node built-ins and its own files at import time (execa only on first runProcess)', () => {
  const sources = readdirSync(sourceDir).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
  assert.ok(sources.includes('index.ts'));
  for (const name of sources) {
    const text = readFileSync(new URL(name, sourceDir), 'utf8');
    for (const match of text.matchAll(/^import\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)) {
      const [, typeOnly, specifier] = match;
      if (typeOnly) continue;
      assert.ok(specifier!.startsWith('node:') || specifier!.startsWith('./'), `${name} imports ${specifier} at load time`);
    }
    assert.doesNotMatch(text, /\bfetch\(/, `${name} uses global fetch`);
  }
});
