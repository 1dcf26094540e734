import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metadataCacheFiles, writeMetadataCache } from './metadata-cache.ts';
import { pythonJsonDumps } from './python-json.ts';

// Where JSON.stringify and Python's json.dumps differ: small floats, -0.0, DEL (ensure_ascii escapes it).
const METADATA =
  '{"AWS::CloudFormation::Init": {"config": {"ratio": 0.00001, "tiny": 1.5e-7, "zero": -0.0, "del": "a\\u007fb", "n": [1, 2.5]}}}';

test('last_metadata and printed metadata are json.dumps text byte for byte (1e-05, -0.0, \\u007f)', async () => {
  const python = execFileSync('python3', ['-c', 'import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin)))'], {
    input: METADATA,
    encoding: 'utf8',
  });
  const cacheDir = join(mkdtempSync(join(tmpdir(), 'cfn-json-')), 'cache');
  const files = metadataCacheFiles({ cfnCacheDir: cacheDir }, 'Server');
  await writeMetadataCache(files, cacheDir, JSON.parse(METADATA));
  assert.equal(readFileSync(files.lastFile, 'utf8'), python);
  assert.equal(readFileSync(files.resourceFile, 'utf8'), python);
  assert.equal(pythonJsonDumps(JSON.parse(METADATA)), python);
});
