// Retries on 503 as the Python client does, a timeout and an AbortSignal per call, and no
// answer at all: through a small proxy in front of the real server that answers 503 first.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';

import { EpisodicClient, ServerError, StoreBusy, retryAfter } from '../dist/index.js';
import { server } from './harness.mjs';

let srv;
before(async () => {
  srv = await server(after);
});

/** A proxy to the real server that answers the first `busy` requests 503 with `Retry-After: wait`. */
async function busyProxy(busy, wait) {
  const seen = [];
  const proxy = createServer(async (req, res) => {
    seen.push(Date.now());
    if (seen.length <= busy) {
      const headers = { 'content-type': 'application/json' };
      if (wait !== null) headers['retry-after'] = String(wait);
      res.writeHead(503, headers);
      res.end(JSON.stringify({ error: { code: 'store_busy', field: null, message: 'the database is busy' } }));
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const answer = await fetch(`${srv.baseUrl}${req.url}`, {
      method: req.method,
      headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' },
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(await answer.text());
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  after(() => proxy.close());
  return { url: `http://127.0.0.1:${proxy.address().port}`, seen };
}

test('a 503 is tried again after the Retry-After it names, and the answer after it returned', async () => {
  const { url, seen } = await busyProxy(1, 1);
  const mem = new EpisodicClient({ baseUrl: url, key: srv.admin });
  const who = await mem.whoami();
  assert.equal(who.role, 'admin');
  assert.equal(seen.length, 2);
  assert.ok(seen[1] - seen[0] >= 950, `waited ${seen[1] - seen[0]} ms, Retry-After said 1 s`);
});

test('after `retries` tries in all the 503 is thrown as StoreBusy', async () => {
  const { url, seen } = await busyProxy(10, 0);
  const mem = new EpisodicClient({ baseUrl: url, key: srv.admin, retries: 3 });
  const err = await mem.whoami().catch((e) => e);
  assert.ok(err instanceof StoreBusy);
  assert.deepEqual([err.status, err.code], [503, 'store_busy']);
  assert.equal(seen.length, 3);
});

test('retries: 1 never tries again; a Retry-After over 30 s is not waited for', async () => {
  const once = await busyProxy(10, 0);
  await assert.rejects(new EpisodicClient({ baseUrl: once.url, key: srv.admin, retries: 1 }).health(), StoreBusy);
  assert.equal(once.seen.length, 1);
  const long = await busyProxy(10, 120);
  const started = Date.now();
  await assert.rejects(new EpisodicClient({ baseUrl: long.url, key: srv.admin }).health(), StoreBusy);
  assert.equal(long.seen.length, 1);
  assert.ok(Date.now() - started < 1000);
});

test('Retry-After as seconds or an HTTP date; nothing said: a doubling backoff from 0.5 s', () => {
  const now = Date.parse('2026-03-01T10:00:00Z');
  assert.equal(retryAfter('2', 0, now), 2);
  assert.equal(retryAfter('Sun, 01 Mar 2026 10:00:05 GMT', 0, now), 5);
  assert.equal(retryAfter(null, 0, now), 0.5);
  assert.equal(retryAfter(null, 2, now), 2);
});

test('a call that gets no answer within its timeout is a ServerError with code timeout', async () => {
  const silent = createServer(() => {}); // never answers
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  after(() => silent.closeAllConnections() || silent.close());
  const mem = new EpisodicClient({ baseUrl: `http://127.0.0.1:${silent.address().port}`, timeoutMs: 60_000 });
  const started = Date.now();
  const err = await mem.health({ timeoutMs: 200 }).catch((e) => e);
  assert.ok(err instanceof ServerError);
  assert.deepEqual([err.status, err.code], [0, 'timeout']);
  assert.ok(Date.now() - started < 5000);

  const controller = new AbortController();
  const pending = mem.health({ signal: controller.signal });
  controller.abort();
  await assert.rejects(pending, (e) => e.name === 'AbortError');
});

test('an aborted signal also ends the wait between retries', async () => {
  const { url, seen } = await busyProxy(10, 20);
  const controller = new AbortController();
  const pending = new EpisodicClient({ baseUrl: url, key: srv.admin }).health({ signal: controller.signal });
  setTimeout(() => controller.abort(), 200);
  await assert.rejects(pending, (e) => e.name === 'AbortError');
  assert.equal(seen.length, 1);
});

test('a server that cannot be reached is a ServerError with status 0 and code unreachable', async () => {
  const closed = createServer();
  await new Promise((r) => closed.listen(0, '127.0.0.1', r));
  const port = closed.address().port;
  await new Promise((r) => closed.close(r));
  const err = await new EpisodicClient({ baseUrl: `http://127.0.0.1:${port}` }).health().catch((e) => e);
  assert.ok(err instanceof ServerError);
  assert.deepEqual([err.status, err.code], [0, 'unreachable']);
});
