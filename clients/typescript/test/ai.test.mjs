// Seed 004's agent memory through the real Vercel AI SDK: the tools called by a scripted
// model over the OpenAI-compatible provider, and the <memory> block of autoInject.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs } from 'ai';

import { EpisodicClient } from '../dist/index.js';
import { AUTO_INJECT_TOP_K, autoInject, episodicAgentMemory, recallMemoryTool, rememberTool } from '../dist/ai.js';
import { server, unique } from './harness.mjs';
import { lastToolResult, scriptedModel } from './model-server.mjs';

let client;
before(async () => {
  const srv = await server(after);
  client = new EpisodicClient({ baseUrl: srv.baseUrl, key: srv.admin });
});

function modelAt(baseURL) {
  return createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'none' }).chatModel('scripted-model');
}

test('the model calls remember, then recall_memory finds what it saved, through generateText', async () => {
  const scope = { agent: 'support-bot', resource: unique('customer') };
  const model = await scriptedModel([
    () => ({
      toolCall: {
        name: 'remember',
        args: {
          content: 'Globex webhooks failed because their TLS certificate expired; they rotated it on 2026-03-01.',
          evidence: 'Globex rotated their expired certificate this morning',
          source: 'user_assertion',
        },
      },
    }),
    () => ({ toolCall: { name: 'recall_memory', args: { query: 'Globex certificate', k: 3 } } }),
    (body) => ({ text: `From memory: ${lastToolResult(body)}` }),
  ]);
  after(() => model.close());
  const result = await generateText({
    model: modelAt(model.baseURL),
    tools: { remember: rememberTool(client, scope), recall_memory: recallMemoryTool(client, scope) },
    stopWhen: stepCountIs(5),
    prompt: 'Globex rotated their expired certificate this morning. What do we know about Globex?',
  });
  // The tools were offered with their JSON schemas...
  const offered = Object.fromEntries(model.requests[0].tools.map((t) => [t.function.name, t.function]));
  assert.deepEqual(Object.keys(offered).sort(), ['recall_memory', 'remember']);
  assert.deepEqual(offered.recall_memory.parameters.required, ['query']);
  assert.match(offered.recall_memory.description, /UNTRUSTED HINTS/);
  // ...each call ran against the server, and the model saw the answers.
  const [saved] = result.steps[0].toolResults;
  assert.equal(saved.toolName, 'remember');
  const stored = await client.memory({ id: saved.output.id });
  assert.deepEqual([stored.type, stored.agent, stored.resource, stored.source], ['entry', 'support-bot', scope.resource, 'user_assertion']);
  const [recalled] = result.steps[1].toolResults;
  assert.equal(recalled.toolName, 'recall_memory');
  assert.deepEqual(recalled.output.map((e) => e.id), [saved.output.id]);
  assert.equal(recalled.output[0].evidence, 'Globex rotated their expired certificate this morning');
  assert.match(result.text, /From memory: .*certificate expired/);
  assert.equal(model.requests.length, 3);
});

test('recall_memory reads only its agent and resource', async () => {
  const resource = unique('customer');
  await client.remember({ content: 'Initech invoices are due on the 5th', type: 'entry', agent: 'support-bot', resource: unique('other') });
  const mine = await client.remember({ content: 'Initech invoices go to ap@initech.example', type: 'entry', agent: 'support-bot', resource });
  const tool = recallMemoryTool(client, { agent: 'support-bot', resource });
  const found = await tool.execute({ query: 'Initech invoices' }, { toolCallId: 't1', messages: [] });
  assert.deepEqual(found.map((e) => e.id), [mine.id]);
});

test('autoInject renders the <memory> block: the top 12 entries, newest first, each with its age', async () => {
  const scope = { agent: 'support-bot', resource: unique('customer') };
  const written = [];
  for (let i = 0; i < 14; i++) {
    written.push(await client.remember({ ...scope, type: 'entry', content: `Acme order ${1000 + i} shipped late because warehouse ${i} lost its label printer` }));
  }
  const block = await autoInject(client, scope, 'Why did the Acme order ship late?');
  assert.match(block, /^<memory>\n<description>[^<]+<\/description>\n<value>\n/);
  assert.match(block, /<\/value>\n<\/memory>$/);
  const lines = block.split('\n').filter((l) => l.startsWith('- '));
  assert.equal(lines.length, AUTO_INJECT_TOP_K);
  for (const line of lines) assert.match(line, /\((just now|\d+ (second|minute)s? ago)\)$/);
  const order = lines.map((l) => Number(l.match(/order (\d+)/)[1]));
  assert.deepEqual(order, [...order].sort((a, b) => b - a), 'newest first');
  assert.equal(order[0], 1013); // the newest is shown
  assert.equal(await autoInject(client, scope, '   '), '');
  const { autoInject: bound, tools } = episodicAgentMemory(client, scope);
  assert.equal(await bound('Why did the Acme order ship late?'), block);
  assert.deepEqual(Object.keys(tools), ['recall_memory', 'remember']);
});
