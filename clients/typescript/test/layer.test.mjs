// Seed 002's MemoryLayer backed by the server: the hooks in a runtime's order over three runs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { EpisodicClient, episodicMemory, outcomeText, transcriptOf } from '../dist/index.js';
import { server, unique } from './harness.mjs';

let client;
before(async () => {
  const srv = await server(after);
  client = new EpisodicClient({ baseUrl: srv.baseUrl, key: srv.admin });
});

const say = (role, text) => ({ type: 'message', role, content: [{ type: role === 'user' ? 'input_text' : 'output_text', text }] });

const RUNS = [
  {
    items: [
      say('user', 'The payments nightly reconciliation job crashed with an out-of-memory error on worker 3.'),
      say('assistant', 'I raised the worker memory limit from 2 GiB to 4 GiB and the reconciliation completed.'),
    ],
    outcome: 'success',
    word: 'reconciliation',
  },
  {
    items: [
      say('user', 'The partner webhook to Globex keeps failing its TLS handshake since this morning.'),
      { type: 'function_call_output', output: { error: 'certificate expired on 2026-02-28' } },
      say('assistant', 'The Globex certificate expired; I could not rotate it without their new chain.'),
    ],
    outcome: { status: 'failed', error: new Error('certificate expired') },
    word: 'Globex',
  },
  {
    items: [
      say('user', 'Please archive the refund ledgers older than 2024 to cold storage.'),
      say('assistant', 'Archived 312 refund ledgers from 2019 to 2023 into the cold storage bucket.'),
    ],
    outcome: 'success',
    word: 'ledgers',
  },
];

test('the layer has seed 002 shape: slot 300, resource scope, budget 300..2000', () => {
  const layer = episodicMemory({ client, agent: 'ops-bot', resource: 'team:payments' });
  assert.equal(layer.id, 'episodic-memory');
  assert.equal(layer.slot, 300);
  assert.equal(layer.scope, 'resource');
  assert.deepEqual(layer.budget, { min: 300, max: 2000 });
  assert.deepEqual(Object.keys(layer.hooks), ['init', 'recall', 'onComplete']);
});

test('three runs: init, recall within the budget, onComplete, each run seeing the ones before it', async () => {
  const resource = unique('team');
  const layer = episodicMemory({ client, workspace: 'acme', agent: 'ops-bot', resource });
  const calls = [];
  for (const [i, run] of RUNS.entries()) {
    const { state } = await layer.hooks.init({});
    calls.push('init');
    assert.equal(state.runs, i, `run ${i + 1} starts after ${i} runs`);
    const recalled = await layer.hooks.recall({ state, budget: 2000 });
    calls.push('recall');
    if (i === 0) {
      assert.equal(recalled, null); // nothing yet: nothing to inject
    } else {
      const [item] = recalled.items;
      assert.deepEqual([item.id, item.type, item.role, item.status], ['episodic-recall', 'message', 'developer', 'completed']);
      const text = item.content[0].text;
      assert.match(text, /^<episodes>\n[\s\S]*\n<\/episodes>$/);
      for (const earlier of RUNS.slice(0, i)) assert.ok(text.includes(earlier.word), `${earlier.word} recalled in run ${i + 1}`);
      assert.ok(!text.includes(run.word), 'a run does not recall itself');
      assert.ok(recalled.tokenCount <= 2000 && recalled.tokenCount > 0);
      // listed oldest first, as seed 002 does: the newest run's line comes last
      if (i === 2) assert.ok(text.indexOf(RUNS[0].word) < text.indexOf(RUNS[1].word));
    }
    const done = await layer.hooks.onComplete({ log: { items: run.items }, state, outcome: run.outcome });
    calls.push('onComplete');
    assert.equal(done.state.runs, i + 1);
    assert.equal(done.episodes[0].payload.outcome, outcomeText(run.outcome));
    // searchable as soon as onComplete returns
    const found = await client.recall({ query: run.word, agent: 'ops-bot', resource, types: 'episode' });
    assert.ok(found.hits.some((h) => h.id === done.episodes[0].id), `run ${i + 1}'s episode is found`);
  }
  assert.deepEqual(calls, ['init', 'recall', 'onComplete', 'init', 'recall', 'onComplete', 'init', 'recall', 'onComplete']);
  const last = await layer.hooks.recall({ state: (await layer.hooks.init({})).state, budget: 2000 });
  assert.match(last.items[0].content[0].text, /outcome: failed: certificate expired/);
});

test('recall keeps to the budget: the newest runs that fit, a smaller budget fewer of them', async () => {
  const resource = unique('team');
  const layer = episodicMemory({ client, agent: 'ops-bot', resource });
  const { state } = await layer.hooks.init({});
  for (let i = 0; i < 6; i++) {
    const detail = `Incident ${i}: the search indexer for shard ${i} stalled after a schema migration; ` +
      'we paused ingestion, rebuilt the shard index from the snapshot, replayed the queued writes, ' +
      'checked the document counts against the primary and resumed ingestion once the lag was under a minute.';
    await layer.hooks.onComplete({ log: { items: [say('user', detail), say('assistant', `Shard ${i} is healthy again.`)] }, state, outcome: 'success' });
  }
  const wide = await layer.hooks.recall({ state, budget: 2000 });
  const narrow = await layer.hooks.recall({ state, budget: 300 });
  assert.ok(narrow.tokenCount <= 300);
  assert.ok(narrow.episodes.length < wide.episodes.length, `${narrow.episodes.length} < ${wide.episodes.length}`);
  // the newest run is kept under the small budget
  assert.equal(narrow.episodes.at(-1).id, wide.episodes.at(-1).id);
  const below = await layer.hooks.recall({ state, budget: 10 }); // held to the minimum, 300
  assert.equal(below.episodes.length, narrow.episodes.length);
});

test('a run log becomes the transcript the server takes', () => {
  assert.deepEqual(
    transcriptOf([
      { type: 'message', role: 'developer', content: 'Be brief.' },
      say('user', 'hi'),
      { type: 'function_call', name: 'lookup', arguments: '{}' },
      { type: 'function_call_output', output: 'found 3' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '' }] },
    ]),
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'tool', content: 'found 3' },
    ],
  );
  assert.equal(outcomeText({ status: 'failed', error: new Error('timeout') }), 'failed: timeout');
  assert.equal(outcomeText(undefined), undefined);
});
