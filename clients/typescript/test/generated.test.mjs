// The committed types (src/generated/api.ts) are what openapi-typescript makes of the
// committed OpenAPI document (openapi.json); tests/test_openapi_document.py checks that the
// document is the server's. Together: the client's types are the API's.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { packageDir } from './harness.mjs';

test('src/generated/api.ts is generated from openapi.json as committed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-types-'));
  try {
    const out = join(dir, 'api.ts');
    const cli = join(packageDir, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
    execFileSync(process.execPath, [cli, join(packageDir, 'openapi.json'), '-o', out], { stdio: 'pipe' });
    const committed = readFileSync(join(packageDir, 'src', 'generated', 'api.ts'), 'utf8');
    assert.ok(
      readFileSync(out, 'utf8') === committed,
      'src/generated/api.ts is stale: run `npm run generate` in clients/typescript and commit it',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every path of the document has its type', () => {
  const document = JSON.parse(readFileSync(join(packageDir, 'openapi.json'), 'utf8'));
  const types = readFileSync(join(packageDir, 'src', 'generated', 'api.ts'), 'utf8');
  for (const path of Object.keys(document.paths)) assert.ok(types.includes(`"${path}": {`), path);
});
