// examples/typescript: both examples compiled with tsc and run as a user runs them, against
// the real server and a scripted chat-completions model.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { EpisodicClient } from '../dist/index.js';
import { packageDir, repoRoot, server, unique } from './harness.mjs';
import { lastToolResult, scriptedModel } from './model-server.mjs';

const examples = join(repoRoot, 'examples', 'typescript');
const run = promisify(execFile);
let srv;
let client;

before(async () => {
  srv = await server(after);
  client = new EpisodicClient({ baseUrl: srv.baseUrl, key: srv.admin });
  // What `npm install` in examples/typescript would give, from this package's own tools.
  const modules = join(examples, 'node_modules');
  mkdirSync(join(modules, '@ai-sdk'), { recursive: true });
  const links = {
    'episodic-agent-memory': packageDir,
    ai: join(packageDir, 'node_modules', 'ai'),
    zod: join(packageDir, 'node_modules', 'zod'),
    '@types': join(packageDir, 'node_modules', '@types'),
    '@ai-sdk/openai-compatible': join(packageDir, 'node_modules', '@ai-sdk', 'openai-compatible'),
  };
  for (const [name, target] of Object.entries(links)) {
    if (!existsSync(join(modules, name))) symlinkSync(target, join(modules, name), 'dir');
  }
  const tsc = join(packageDir, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(examples, 'tsconfig.json')], { stdio: 'pipe' });
});

function envFor(model, resource) {
  return { ...process.env, EPISODIC_URL: srv.baseUrl, EPISODIC_KEY: srv.admin, OPENAI_BASE_URL: model.baseURL, OPENAI_API_KEY: 'none', MODEL: 'scripted', RESOURCE: resource };
}

function runWithInput(file, env, input) {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [join(examples, 'dist', file)], { env, cwd: examples }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    );
    child.stdin.end(input);
  });
}

test('the chat loop: each run recalls the runs before it and stores its own', async () => {
  const resource = unique('team');
  const model = await scriptedModel([(body) => ({ text: `answer ${body.messages.filter((m) => m.role === 'user').length}` })]);
  after(() => model.close());
  const out = await runWithInput(
    'chat-layer.js',
    envFor(model, resource),
    'The ledger export to Contoso failed with a quota error.\nWhy did the Contoso export fail last time?\n',
  );
  assert.match(out, /assistant: answer 1\n\(memory: 1 episode\(s\) stored, 0 tokens recalled\)/);
  assert.match(out, /assistant: answer 1\n\(memory: 1 episode\(s\) stored, [1-9]\d* tokens recalled\)/);
  const [first, second] = model.requests.map((r) => r.messages.find((m) => m.role === 'system').content);
  assert.ok(!first.includes('<episodes>'));
  assert.match(second, /<episodes>\n[^\n]*UNTRUSTED[^\n]*\n\[[^\]]+\] \(outcome: success\) The ledger export to Contoso[^\n]*\n<\/episodes>/);
  assert.equal((await client.layerInit({ agent: 'ops-bot', resource })).runs, 2);
});

test('the agent: the model saves with remember, and the next run sees it injected and recalls it', async () => {
  const resource = unique('customer');
  const model = await scriptedModel([
    () => ({
      toolCall: {
        name: 'remember',
        args: { content: 'Globex webhooks fail when their TLS certificate expires', evidence: 'the certificate expired', source: 'user_assertion' },
      },
    }),
    () => ({ text: 'Saved.' }),
    () => ({ toolCall: { name: 'recall_memory', args: { query: 'Globex webhooks' } } }),
    (body) => ({ text: `Last time: ${lastToolResult(body)}` }),
  ]);
  after(() => model.close());
  const env = envFor(model, resource);
  const file = join(examples, 'dist', 'agent-tools.js');
  const first = (await run(process.execPath, [file, 'Globex webhooks fail: the certificate expired'], { env })).stdout;
  assert.match(first, /tool: remember .*TLS certificate/);
  assert.match(first, /assistant: Saved\./);
  const second = (await run(process.execPath, [file, 'Globex webhooks fail again, why?'], { env })).stdout;
  assert.match(second, /tool: recall_memory/);
  assert.match(second, /assistant: Last time: .*TLS certificate expires/);
  const system = model.requests[2].messages.find((m) => m.role === 'system').content;
  assert.match(system, /<memory>[\s\S]*Globex webhooks fail when their TLS certificate expires \(just now\)[\s\S]*<\/memory>/);
});
