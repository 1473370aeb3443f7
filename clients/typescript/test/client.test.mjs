// Every method of EpisodicClient against a real `episodic serve`, and its typed errors.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  EpisodicClient,
  EpisodicError,
  Forbidden,
  InvalidInput,
  NotFound,
  ServerError,
  Unauthenticated,
  UnknownPolicy,
  errorOf,
} from '../dist/index.js';
import { server, unique } from './harness.mjs';

let srv;
let mem;
before(async () => {
  srv = await server(after);
  mem = new EpisodicClient({ baseUrl: srv.baseUrl, key: srv.admin });
});

describe('the server', () => {
  test('health says the server is up, its recall mode and schema', async () => {
    const health = await mem.health();
    assert.equal(health.status, 'ok');
    assert.equal(health.episodic, 'sparse-only');
    assert.ok(health.schema_version > 0);
  });

  test('whoami names the key the client holds', async () => {
    assert.equal((await mem.whoami()).role, 'admin');
    const agent = await new EpisodicClient({ baseUrl: srv.baseUrl, key: srv.agent }).whoami();
    assert.deepEqual([agent.role, agent.agent, agent.workspace], ['agent', 'ops-bot', 'acme']);
  });

  test('memoryHealth is null before the first snapshot, not an error', async () => {
    assert.equal(await mem.memoryHealth({ workspace: 'acme' }), null);
  });
});

describe('writing and reading memories', () => {
  test('remember, recall, render, memory, listMemories: camelCase options sent by the API names', async () => {
    const agent = unique('agent');
    const stored = await mem.remember({
      content: 'The staging deploy needs the VPN profile called blue-tunnel',
      agent,
      importance: 0.8,
      payload: { ticketId: 'OPS-7' },
    });
    assert.equal(stored.agent, agent);
    assert.equal(stored.importance, 0.8);
    assert.deepEqual(stored.payload, { ticketId: 'OPS-7' }); // a payload's own keys are left as given

    const found = await mem.recall({ query: 'blue-tunnel VPN', agent, k: 3, includeSuperseded: false });
    assert.deepEqual(found.hits.map((h) => h.id), [stored.id]);

    const block = await mem.render({ query: 'blue-tunnel VPN', agent, maxChars: 2000 });
    assert.match(block, /blue-tunnel/);

    assert.equal((await mem.memory({ id: stored.id })).content, stored.content);
    const page = await mem.listMemories({ agent, types: 'note', limit: 10 });
    assert.deepEqual(page.items.map((m) => m.id), [stored.id]);
    assert.deepEqual((await mem.listMemories({ agent, types: ['episode'] })).items, []);
  });

  test('asOf is sent as as_of: a memory written later is not recalled as of before it', async () => {
    const agent = unique('agent');
    const m = await mem.remember({ content: 'The invoice cron runs at 04:00 UTC', agent });
    const ids = async (options) => (await mem.recall({ query: 'invoice cron', agent, ...options })).hits.map((h) => h.id);
    assert.ok(!(await ids({ asOf: new Date('2000-01-01T00:00:00Z') })).includes(m.id));
    assert.ok((await ids({})).includes(m.id));
  });

  test('update keeps the earlier version in history; retire hides it from recall', async () => {
    const agent = unique('agent');
    const first = await mem.remember({ content: 'The refund queue limit is 10 jobs', agent });
    const changed = await mem.update({ id: first.id, content: 'The refund queue limit is 20 jobs' });
    assert.equal(changed.content, 'The refund queue limit is 20 jobs');
    const versions = await mem.history({ id: first.id });
    // newest first: the current version, then the one it replaced
    assert.deepEqual(versions.map((v) => [v.content, v.current]), [
      ['The refund queue limit is 20 jobs', true],
      ['The refund queue limit is 10 jobs', false],
    ]);
    assert.equal((await mem.retire({ id: first.id })).status, 'retired');
    assert.equal((await mem.recall({ query: 'refund queue limit', agent })).hits.length, 0);
  });

  test('supersede replaces a memory, and supersessions says by what and why', async () => {
    const agent = unique('agent');
    const old = await mem.remember({ content: 'The on-call phone is 555-0100', agent });
    const replaced = await mem.supersede({ oldId: old.id, new: 'The on-call phone is 555-0199', reason: 'number changed' });
    assert.equal(replaced.content, 'The on-call phone is 555-0199');
    const [one] = await mem.supersessions({ id: old.id });
    assert.deepEqual([one.old, one.new, one.reason], [old.id, replaced.id, 'number changed']);
    assert.equal((await mem.memory({ id: old.id })).superseded_by, replaced.id);
  });

  test('addMessage, addMessages and recent: a conversation becomes episodes when its session ends', async () => {
    const conversation = unique('chat');
    const agent = unique('agent');
    const one = await mem.addMessage({ content: 'The nightly export failed with a disk-full error', conversation, agent, role: 'user' });
    assert.equal(one.conversation, conversation);
    const batch = await mem.addMessages({
      conversation,
      agent,
      messages: [
        { role: 'assistant', content: 'I cleared the old export archives and reran it' },
        { role: 'user', content: 'It finished, thanks' },
        'not an object', // a bad item is reported by its index, the rest kept
      ],
    });
    assert.equal(batch.stored, 2);
    assert.equal(batch.ids.length, 3);
    assert.equal(batch.ids[2], null); // each message's id in order, null where refused
    assert.deepEqual(batch.errors.map((e) => e.index), [2]);
    const ended = await mem.endSession({ session: conversation });
    assert.equal(ended.session, conversation);
    assert.ok(ended.episodes >= 1);
    const episodes = await mem.recent({ conversation, limit: 5 });
    assert.ok(episodes.length >= 1);
    assert.equal(episodes[0].conversation, conversation);
  });

  test('ingest reports what it stored and numbers each bad event', async () => {
    const agent = unique('agent');
    const report = await mem.ingest({
      events: [
        { type: 'deploy', summary: 'Deployed billing v42 to production', agent, ts: '2026-01-01T10:00:00Z' },
        { type: 'deploy', summary: 7, agent },
      ],
    });
    assert.equal(report.received, 2);
    assert.equal(report.stored, 1);
    assert.deepEqual(report.errors.map((e) => e.index), [1]);
  });

  test('forget deletes what it names and counts it', async () => {
    const agent = unique('agent');
    const m = await mem.remember({ content: 'A memory to be forgotten', agent });
    const counts = await mem.forget({ memory: m.id });
    assert.equal(counts.memories, 1);
    await assert.rejects(mem.memory({ id: m.id }), NotFound);
  });

  test('layerInit, layerRecall and completeSession: the seed 002 routes', async () => {
    const agent = unique('agent');
    const before = await mem.layerInit({ agent });
    assert.deepEqual([before.episodes, before.runs], [0, 0]);
    const done = await mem.completeSession({
      agent,
      outcome: 'success',
      transcript: [
        { role: 'user', content: 'The refund batch timed out.' },
        { role: 'assistant', content: 'Raised the pool to 20; it finished.' },
      ],
    });
    assert.equal(done.episodes.length, 1);
    assert.equal(done.episodes[0].payload.outcome, 'success');
    const recalled = await mem.layerRecall({ agent, budgetTokens: 800 });
    assert.match(recalled.text, /^<episodes>/);
    assert.match(recalled.text, /outcome: success/);
    assert.equal(recalled.budget_tokens, 800);
    assert.equal((await mem.layerInit({ agent })).runs, 1);
  });
});

describe('errors', () => {
  test('a bad field is an InvalidInput naming it, with the API code and status', async () => {
    const err = await mem.layerRecall({ budgetTokens: 'lots' }).catch((e) => e);
    assert.ok(err instanceof InvalidInput && err instanceof EpisodicError);
    assert.deepEqual([err.field, err.code, err.status], ['budget_tokens', 'invalid_input', 422]);
    const bad = await mem.completeSession({ transcript: [{ role: 'user', content: 'hi' }, { role: 'x', content: 'y' }] }).catch((e) => e);
    assert.equal(bad.field, 'transcript.1.role');
  });

  test('an unknown policy is an UnknownPolicy on the policy field', async () => {
    const err = await mem.recall({ query: 'x', policy: 'no-such-policy' }).catch((e) => e);
    assert.ok(err instanceof UnknownPolicy && err instanceof InvalidInput);
    assert.deepEqual([err.field, err.code], ['policy', 'unknown_policy']);
  });

  test('a missing memory is NotFound; a bad key Unauthenticated; another agent Forbidden', async () => {
    const missing = await mem.memory({ id: 'mem_nope' }).catch((e) => e);
    assert.ok(missing instanceof NotFound);
    assert.deepEqual([missing.status, missing.code], [404, 'not_found']);
    const stranger = new EpisodicClient({ baseUrl: srv.baseUrl, key: 'ep_k_bad_key' });
    const unauth = await stranger.whoami().catch((e) => e);
    assert.ok(unauth instanceof Unauthenticated);
    assert.equal(unauth.status, 401);
    const agentKey = new EpisodicClient({ baseUrl: srv.baseUrl, key: srv.agent });
    const forbidden = await agentKey.recall({ query: 'x', agent: 'someone-else' }).catch((e) => e);
    assert.ok(forbidden instanceof Forbidden);
    assert.equal(forbidden.status, 403);
  });

  test("an error carries the server's request id: its own, or the one the caller sent", async () => {
    const seen = [];
    const sent = {};
    const watching = new EpisodicClient({
      baseUrl: srv.baseUrl,
      key: srv.admin,
      fetch: async (url, init) => {
        const answer = await fetch(url, { ...init, headers: { ...init.headers, ...sent } });
        seen.push(answer.headers.get('x-request-id'));
        return answer;
      },
    });
    const missing = await watching.memory({ id: 'mem_nope' }).catch((e) => e);
    assert.ok(missing instanceof NotFound);
    assert.match(missing.requestId, /^[0-9a-f]{32}$/);
    assert.equal(missing.requestId, seen.at(-1)); // the id the server logged the request by
    sent['x-request-id'] = 'checkout-7f3a.retry-2';
    const bad = await watching.recall({ query: 'x', policy: 'no-such-policy' }).catch((e) => e);
    assert.ok(bad instanceof UnknownPolicy);
    assert.equal(bad.requestId, 'checkout-7f3a.retry-2');
  });

  test('an answer that is not the API\'s keeps the id from its header; no answer has none', async () => {
    const proxied = new EpisodicClient({
      baseUrl: 'http://proxy.invalid',
      fetch: async () => new Response('<html>bad gateway</html>', { status: 502, headers: { 'x-request-id': 'edge-41' } }),
    });
    const gateway = await proxied.health().catch((e) => e);
    assert.ok(gateway instanceof ServerError);
    assert.deepEqual([gateway.status, gateway.requestId], [502, 'edge-41']);
    assert.equal(errorOf(404, { error: { code: 'not_found', message: 'x', request_id: 'from-body' } }, 'hdr').requestId, 'from-body');
    const down = new EpisodicClient({
      baseUrl: 'http://127.0.0.1:9',
      retries: 1,
      fetch: async () => {
        throw new TypeError('fetch failed');
      },
    });
    const none = await down.health().catch((e) => e);
    assert.deepEqual([none.code, none.requestId], ['unreachable', null]);
  });

  test('checked before sending: an empty id, an update with nothing to change', async () => {
    await assert.rejects(mem.memory({ id: ' ' }), (e) => e instanceof InvalidInput && e.field === 'memory_id');
    await assert.rejects(mem.update({ id: 'mem_x' }), (e) => e instanceof InvalidInput && e.field === 'content');
    assert.throws(() => new EpisodicClient({ baseUrl: srv.baseUrl, retries: 0 }), (e) => e.field === 'retries');
  });
});

describe('checked in the client', () => {
  test('a layer with a bad order or an empty session is refused before any call', () => {
    assert.throws(() => mem.layer({ order: 'random' }), (e) => e instanceof InvalidInput && e.field === 'order');
    assert.throws(() => mem.layer({ session: '  ' }), (e) => e instanceof InvalidInput && e.field === 'session');
  });

  test('a transcript that is not a list is refused by the server, naming transcript', async () => {
    await assert.rejects(mem.completeSession({ transcript: 'hello' }), (e) => e instanceof InvalidInput && e.field === 'transcript');
  });

  test("a layer keeps the session it is given across runs, and starts a new one of its own per run", async () => {
    const agent = unique('agent');
    const named = mem.layer({ agent, session: 'chat-42' });
    const own = mem.layer({ agent });
    const first = own.session;
    assert.match(first, /^run_[0-9a-f]{16}$/);
    for (const layer of [named, own]) {
      await layer.recall({ budgetTokens: 300 });
      await layer.onComplete({ transcript: [{ role: 'user', content: 'The cache warmer stalled.' }], outcome: 'success' });
    }
    assert.equal(named.session, 'chat-42');
    assert.notEqual(own.session, first);
  });
});
