/**
 * `EpisodicClient`: the HTTP API of an `episodic serve`, with the methods, parameters and
 * results of the Python `Client` (camelCase here, the API's names on the wire).
 *
 *     const mem = new EpisodicClient({ baseUrl: 'http://127.0.0.1:8765', key });
 *     await mem.remember({ content: 'the deploy needs the VPN', agent: 'ops' });
 *     const found = await mem.recall({ query: 'how do I deploy?', agent: 'ops' });
 *
 * Results are the API's JSON, typed from its OpenAPI document. `workspace` defaults to the
 * key's. A 503 is tried again, waiting what `Retry-After` says, up to `retries` tries in all.
 */
import { EpisodicError, ServerError, errorOf, invalid } from './errors.js';
import { RemoteLayer, type RemoteLayerOptions } from './remote-layer.js';
import { DEFAULT_RETRIES, retryAfter, shouldRetry } from './retry.js';
import type {
  CallOptions,
  Completed,
  CompleteOptions,
  EndSessionOptions,
  Episode,
  ForgetCounts,
  ForgetOptions,
  HealthView,
  IngestOptions,
  IngestReport,
  LayerRecallOptions,
  LayerState,
  LayerWhere,
  ListOptions,
  Memory,
  MemoryHealthOptions,
  MemoryIdOptions,
  MemoryPage,
  MessageOptions,
  MessagesOptions,
  MessageStored,
  MessagesReport,
  RecallOptions,
  RecallResult,
  Recalled,
  RecentOptions,
  RememberOptions,
  RenderOptions,
  RenderResult,
  ServerHealth,
  SessionEnd,
  Supersession,
  SupersedeOptions,
  UpdateOptions,
  Version,
  WhoAmI,
} from './types.js';

/** The most items the API takes in one request: a longer batch is sent in parts. */
export const MAX_BATCH = 1000;
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface EpisodicClientOptions {
  /** Where `episodic serve` listens, e.g. `http://127.0.0.1:8765`. */
  baseUrl: string;
  /** An API key (`episodic keys create --workspace W --role admin`). */
  key?: string;
  /** Milliseconds before a call is given up; each call may say otherwise. */
  timeoutMs?: number;
  /** Tries in all for a 503 (the first included); 1: never try again. */
  retries?: number;
  /** The `fetch` to send with (the global one by default). */
  fetch?: typeof globalThis.fetch;
}

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
  query?: Record<string, unknown>;
  /** An answer of this status is a result (null), not an error. */
  absent?: number;
}

const CALL_KEYS = new Set(['signal', 'timeoutMs']);

/** `asOf` -> `as_of`: the API's name of an option. */
function wireName(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * The options as the API's JSON: undefined and null left out (the server's default),
 * names snake_case at the top level only (a payload's keys are the caller's), dates as ISO
 * 8601, `types` always a list.
 */
export function wire(options: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || value === null || CALL_KEYS.has(name)) continue;
    let sent: unknown = value;
    if (value instanceof Date) sent = value.toISOString();
    else if (name === 'types') sent = typeof value === 'string' ? [value] : [...(value as string[])];
    out[wireName(name)] = sent;
  }
  return out;
}

function segment(id: unknown, field: string): string {
  if (typeof id !== 'string' || !id.trim()) throw invalid(field, 'required: a non-empty id');
  return encodeURIComponent(id);
}

function split<T>(options: T & CallOptions): [CallOptions, Omit<T, keyof CallOptions>] {
  const { signal, timeoutMs, ...rest } = options;
  const call: CallOptions = {};
  if (signal !== undefined) call.signal = signal;
  if (timeoutMs !== undefined) call.timeoutMs = timeoutMs;
  return [call, rest];
}

function parts<T>(items: ReadonlyArray<T>): Array<[number, T[]]> {
  const out: Array<[number, T[]]> = [];
  for (let start = 0; start < items.length; start += MAX_BATCH) out.push([start, items.slice(start, start + MAX_BATCH)]);
  return out;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class EpisodicClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly #key: string | undefined;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: EpisodicClientOptions) {
    if (typeof options?.baseUrl !== 'string' || !options.baseUrl) throw invalid('baseUrl', 'required: the server URL');
    const retries = options.retries ?? DEFAULT_RETRIES;
    if (!Number.isInteger(retries) || retries < 1) throw invalid('retries', 'a whole number of tries, at least 1');
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(timeoutMs > 0)) throw invalid('timeoutMs', 'milliseconds, more than 0');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#key = options.key;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  // -- sending ------------------------------------------------------------------------
  async #send<T>(call: Call, options: CallOptions): Promise<T> {
    let url = `${this.baseUrl}${call.path}`;
    if (call.query) {
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(call.query)) {
        for (const one of Array.isArray(value) ? value : [value]) params.append(name, String(one));
      }
      const text = params.toString();
      if (text) url += `?${text}`;
    }
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#key) headers.authorization = `Bearer ${this.#key}`;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const body = call.body === undefined ? null : JSON.stringify(call.body);
    for (let attempt = 0; ; attempt++) {
      const response = await this.#attempt(url, { method: call.method, headers, body }, options);
      const text = await response.text();
      if (response.status === 503) {
        const wait = retryAfter(response.headers.get('retry-after'), attempt);
        if (shouldRetry(503, wait, attempt, this.retries)) {
          await sleep(wait * 1000, options.signal);
          continue;
        }
      }
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // not JSON: the text is shown in the error
      }
      if (!response.ok) {
        const error = errorOf(response.status, parsed, response.headers.get('x-request-id'));
        if (call.absent === response.status && error.code === 'not_found') return null as T;
        throw error;
      }
      return parsed as T;
    }
  }

  async #attempt(url: string, init: RequestInit, options: CallOptions): Promise<Response> {
    const { signal } = options;
    if (signal?.aborted) throw signal.reason;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.#fetch(url, { ...init, signal: controller.signal });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) {
        throw new ServerError(`no answer from ${this.baseUrl} within ${timeoutMs} ms`, { status: 0, code: 'timeout', cause: error });
      }
      if (error instanceof EpisodicError) throw error;
      throw new ServerError(`cannot reach ${this.baseUrl}: ${String(error)}`, { status: 0, code: 'unreachable', cause: error });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  // -- writing ------------------------------------------------------------------------
  /** Journal events (`POST /v1/events`), 1000 per request; one report, errors numbered across the batch. */
  async ingest(options: IngestOptions): Promise<IngestReport> {
    const [call, { events }] = split(options);
    const out: IngestReport = {
      received: 0, stored: 0, duplicates: 0, admitted: 0, errors: [], deprecated_fields: [],
      not_admitted: [], not_admitted_by_reason: [],
    };
    for (const [start, part] of parts(events)) {
      const report = await this.#send<IngestReport>({ method: 'POST', path: '/v1/events', body: { events: part } }, call);
      out.received += report.received;
      out.stored += report.stored;
      out.duplicates += report.duplicates;
      out.admitted += report.admitted;
      out.errors.push(...report.errors.map((e) => ({ ...e, index: e.index + start })));
      for (const f of report.deprecated_fields) if (!out.deprecated_fields.includes(f)) out.deprecated_fields.push(f);
      out.not_admitted.push(...report.not_admitted.map((n) => ({ ...n, index: n.index + start })));
      for (const c of report.not_admitted_by_reason) {
        const same = out.not_admitted_by_reason.find((o) => o.rule === c.rule && o.reason === c.reason);
        if (same) same.count += c.count;
        else out.not_admitted_by_reason.push({ ...c });
      }
    }
    return out;
  }

  /** One message of a conversation: its id, workspace, conversation and time. */
  async addMessage(options: MessageOptions): Promise<MessageStored> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/messages', body: wire(rest) }, call);
  }

  /** A batch of messages, 1000 per request: one report, errors numbered across the batch. */
  async addMessages(options: MessagesOptions): Promise<MessagesReport> {
    const [call, { messages, ...common }] = split(options);
    const out: MessagesReport = { received: 0, stored: 0, duplicates: 0, ids: [], errors: [] };
    for (const [start, part] of parts(messages.map((m) => wire(m)))) {
      const body = { messages: part, ...wire(common) };
      const report = await this.#send<MessagesReport>({ method: 'POST', path: '/v1/messages', body }, call);
      out.received += report.received;
      out.stored += report.stored;
      out.duplicates += report.duplicates;
      out.ids.push(...report.ids);
      out.errors.push(...report.errors.map((e) => ({ ...e, index: e.index + start })));
    }
    return out;
  }

  /** A memory written directly (a note, a learning, an entry). */
  async remember(options: RememberOptions): Promise<Memory> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/memories', body: wire(rest) }, call);
  }

  /** Forget (delete) what the options name; the counts of what went. */
  async forget(options: ForgetOptions): Promise<ForgetCounts> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/forget', body: wire(rest) }, call);
  }

  /** Change a memory's content, importance or payload (its earlier version is kept: `history`). */
  async update(options: UpdateOptions): Promise<Memory> {
    const [call, { id, ...change }] = split(options);
    const body = wire(change);
    if (Object.keys(body).length === 0) throw invalid('content', 'nothing to change: give content, importance or payload');
    return this.#send({ method: 'PATCH', path: `/v1/memories/${segment(id, 'memory_id')}`, body }, call);
  }

  /** Retire a memory: kept, no longer recalled. */
  async retire(options: MemoryIdOptions): Promise<Memory> {
    const [call, { id }] = split(options);
    return this.#send({ method: 'POST', path: `/v1/memories/${segment(id, 'memory_id')}/retire` }, call);
  }

  /** `new` (a memory's id or a new text) replaces `oldId`; the memory that replaced it. */
  async supersede(options: SupersedeOptions): Promise<Memory> {
    const [call, { oldId, ...rest }] = split(options);
    const path = `/v1/memories/${segment(oldId, 'old_id')}/supersede`;
    return this.#send({ method: 'POST', path, body: wire(rest) }, call);
  }

  // -- reading ------------------------------------------------------------------------
  /** The memories that match `query`, best first. */
  async recall(options: RecallOptions): Promise<RecallResult> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/recall', body: wire(rest) }, call);
  }

  /** The recall as a prompt-ready block (`<memory>` entries newest first with the `n8n` policy). */
  async render(options: RenderOptions): Promise<string> {
    return (await this.renderResult(options)).block;
  }

  /** `render`'s whole answer: the block, the ids of the hits it shows, warnings. */
  async renderResult(options: RenderOptions): Promise<RenderResult> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/render', body: wire(rest) }, call);
  }

  /** The newest episodes, newest first. */
  async recent(options: RecentOptions = {}): Promise<Episode[]> {
    const [call, rest] = split(options);
    const answer = await this.#send<{ episodes: Episode[] }>({ method: 'GET', path: '/v1/recent', query: wire(rest) }, call);
    return answer.episodes;
  }

  /** Memories page by page (`cursor`: the last page's `next_cursor`). */
  async listMemories(options: ListOptions = {}): Promise<MemoryPage> {
    const [call, rest] = split(options);
    const { types, ...query } = wire(rest);
    if (types !== undefined) query.type = types; // the query string names it ?type=a&type=b
    return this.#send({ method: 'GET', path: '/v1/memories', query }, call);
  }

  /** One memory by its id. */
  async memory(options: MemoryIdOptions): Promise<Memory> {
    const [call, { id }] = split(options);
    return this.#send({ method: 'GET', path: `/v1/memories/${segment(id, 'memory_id')}` }, call);
  }

  /** A memory's versions, newest first: the current one, then those it replaced. */
  async history(options: MemoryIdOptions): Promise<Version[]> {
    const [call, { id }] = split(options);
    const path = `/v1/memories/${segment(id, 'memory_id')}/history`;
    return (await this.#send<{ versions: Version[] }>({ method: 'GET', path }, call)).versions;
  }

  /** What replaced a memory, or what it replaced, with who decided and why. */
  async supersessions(options: MemoryIdOptions): Promise<Supersession[]> {
    const [call, { id }] = split(options);
    const path = `/v1/memories/${segment(id, 'memory_id')}/supersessions`;
    return (await this.#send<{ supersessions: Supersession[] }>({ method: 'GET', path }, call)).supersessions;
  }

  // -- the server ---------------------------------------------------------------------
  /** `GET /healthz`: up, in which recall mode (`episodic`: vector or sparse-only), at which version. */
  async health(options: CallOptions = {}): Promise<ServerHealth> {
    return this.#send({ method: 'GET', path: '/healthz' }, options);
  }

  /** The memory's health view (freshness, coverage ...); null before its first snapshot. */
  async memoryHealth(options: MemoryHealthOptions = {}): Promise<HealthView | null> {
    const [call, rest] = split(options);
    return this.#send({ method: 'GET', path: '/v1/health', query: wire({ history: 30, ...rest }), absent: 404 }, call);
  }

  /** What the key is bound to: workspace, role, agent, crew. */
  async whoami(options: CallOptions = {}): Promise<WhoAmI> {
    return this.#send({ method: 'GET', path: '/v1/whoami' }, options);
  }

  // -- the agent-loop layer and sessions ------------------------------------------------
  /** `GET /v1/layer/init`: the layer's state (mode, episodes, runs, the last episode's time). */
  async layerInit(options: LayerWhere = {}): Promise<LayerState> {
    const [call, rest] = split(options);
    return this.#send({ method: 'GET', path: '/v1/layer/init', query: wire(rest) }, call);
  }

  /** `POST /v1/layer/recall`: the `<episodes>` block of earlier runs within the token budget. */
  async layerRecall(options: LayerRecallOptions): Promise<Recalled> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/layer/recall', body: wire(rest) }, call);
  }

  /** `POST /v1/layer/complete`: a run's transcript and outcome become its episodes now. */
  async completeSession(options: CompleteOptions): Promise<Completed> {
    const [call, rest] = split(options);
    return this.#send({ method: 'POST', path: '/v1/layer/complete', body: wire(rest) }, call);
  }

  /** End a session: each memory its recalls returned is reinforced once; pending messages become episodes. */
  async endSession(options: EndSessionOptions): Promise<SessionEnd> {
    const [call, { session, ...rest }] = split(options);
    const path = `/v1/sessions/${segment(session, 'session')}/end`;
    return this.#send({ method: 'POST', path, body: wire(rest) }, call);
  }

  /** Seed 002's hooks over this server, keeping a session between calls as the Python `Client.layer` does. */
  layer(options: RemoteLayerOptions = {}): RemoteLayer {
    return new RemoteLayer(this, options);
  }
}
