// `npm test`: one `episodic serve` for the whole suite, then every test file under it.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

import { here, packageDir, startServer } from './harness.mjs';

const started = Date.now();
const served = await startServer();
console.log(`episodic serve (${served.backend}) at ${served.baseUrl} (${((Date.now() - started) / 1000).toFixed(1)} s to start)`);
const files = readdirSync(here)
  .filter((name) => name.endsWith('.test.mjs'))
  .filter((name) => process.argv.length <= 2 || process.argv.slice(2).some((only) => name.includes(only)))
  .map((name) => join(here, name));
let code = 1;
try {
  code = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...files], {
      cwd: packageDir,
      stdio: 'inherit',
      env: {
        ...process.env,
        EPISODIC_TEST_SERVER: JSON.stringify({ baseUrl: served.baseUrl, admin: served.admin, agent: served.agent }),
      },
    });
    child.on('exit', (exitCode) => resolve(exitCode ?? 1));
  });
} finally {
  await served.stop();
}
process.exit(code);
