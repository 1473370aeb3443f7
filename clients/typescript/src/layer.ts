/**
 * Seed 002's memory layer backed by an `episodic serve`: an object of the `MemoryLayer`
 * shape an agent runtime calls at fixed points (`init` when the agent starts, `recall`
 * before a run within a token budget, `onComplete` after it), at slot 300 (episodic) with
 * resource scope. The server keeps the episodes, so every process and thread on the same
 * resource sees the same ones.
 *
 *     const layer = episodicMemory({ client, workspace: 'acme', agent: 'ops-bot', resource: 'team:payments' });
 *     const { state } = await layer.hooks.init({});
 *     const recalled = await layer.hooks.recall({ state, budget: 800 });   // <episodes> ... or null
 *     await layer.hooks.onComplete({ log: { items }, state, outcome: 'success' });
 */
import type { EpisodicClient } from './client.js';
import { RemoteLayer, type Order } from './remote-layer.js';
import type { LayerState, Memory, Role } from './types.js';

/** The slot of episodic memory among a runtime's layers (seed 002's `Slot.EPISODIC`). */
export const EPISODIC_SLOT = 300;
/** The budget the runtime may give `recall`, in tokens (the server holds it to the same range). */
export const LAYER_BUDGET = { min: 300, max: 2000 } as const;

/** The layer's state: the server's view of this agent's and resource's episodes. */
export type EpisodicState = LayerState;

/** A content part of a log item, as the Responses API writes them. */
export interface ContentPart {
  type: string;
  text?: string;
}

/** One item of a run's log: a message (`role`, `content`) or a tool call's output. */
export interface LogItem {
  type?: string;
  role?: string;
  content?: string | ReadonlyArray<ContentPart>;
  name?: string;
  output?: unknown;
  [other: string]: unknown;
}

/** The item `recall` gives the runtime to put into the prompt. */
export interface RecallItem {
  id: 'episodic-recall';
  type: 'message';
  role: 'developer';
  status: 'completed';
  content: Array<{ type: 'input_text'; text: string }>;
}

export interface Recall {
  items: RecallItem[];
  tokenCount: number;
  /** The episodes shown, oldest first, as the server returned them. */
  episodes: Memory[];
}

/** How a run ended: text (`success`, `failed: timeout`) or an object with a `status`. */
export type Outcome = string | { status?: string; error?: unknown; [other: string]: unknown } | null | undefined;

export interface MemoryLayer<State> {
  id: string;
  name: string;
  slot: number;
  scope: 'resource' | 'global' | 'thread';
  budget: { min: number; max: number };
  hooks: {
    init(context: { storage?: unknown; [other: string]: unknown }): Promise<{ state: State }>;
    recall(context: { state: State; budget: number; query?: string; [other: string]: unknown }): Promise<Recall | null>;
    onComplete(context: {
      log: { items: ReadonlyArray<LogItem> };
      state: State;
      outcome?: Outcome;
      [other: string]: unknown;
    }): Promise<{ state: State; episodes: Memory[] }>;
  };
}

export interface EpisodicMemoryOptions {
  client: EpisodicClient;
  workspace?: string;
  resource?: string;
  agent?: string;
  crew?: string;
  /** `recent` (default) or `relevant`, which ranks by the `query` the runtime passes to `recall`. */
  order?: Order;
  policy?: string;
  /** A session kept across runs; by default each run has its own, ended by `onComplete`. */
  session?: string;
}

const ROLE_OF: Record<string, Role> = {
  user: 'user',
  assistant: 'assistant',
  system: 'system',
  developer: 'system',
  tool: 'tool',
};

function textOf(content: LogItem['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text)
    .join('\n');
}

/**
 * A run's log as the transcript the server takes: messages by role (a developer message
 * counts as system), a tool call's output as a tool message; items with no text are left out.
 */
export function transcriptOf(items: ReadonlyArray<LogItem>): Array<{ role: Role; content: string; name?: string }> {
  const out: Array<{ role: Role; content: string; name?: string }> = [];
  for (const item of items) {
    if (item.type === 'function_call_output' || item.type === 'tool_result') {
      const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
      if (output) out.push({ role: 'tool', content: output });
      continue;
    }
    const role = ROLE_OF[String(item.role)];
    const content = textOf(item.content);
    if (role === undefined || !content.trim()) continue;
    out.push(item.name ? { role, content, name: item.name } : { role, content });
  }
  return out;
}

/** The outcome as the server keeps it: text, or an object's `status` (and error). */
export function outcomeText(outcome: Outcome): string | undefined {
  if (outcome === null || outcome === undefined) return undefined;
  if (typeof outcome === 'string') return outcome || undefined;
  const status = typeof outcome.status === 'string' ? outcome.status : JSON.stringify(outcome);
  if (outcome.error === undefined || outcome.error === null) return status;
  const error = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
  return `${status}: ${error}`;
}

/** Seed 002's `MemoryLayer`, backed by the server. */
export function episodicMemory(options: EpisodicMemoryOptions): MemoryLayer<EpisodicState> & { remote: RemoteLayer } {
  const { client, ...where } = options;
  const remote = client.layer(where);
  return {
    id: 'episodic-memory',
    name: 'Episodic Memory',
    slot: EPISODIC_SLOT,
    scope: 'resource',
    budget: { ...LAYER_BUDGET },
    remote,
    hooks: {
      async init() {
        return { state: await remote.init() };
      },
      async recall({ budget, query }) {
        const found = await remote.recall(query ? { budgetTokens: budget, query } : { budgetTokens: budget });
        if (found.episodes.length === 0) return null;
        return {
          items: [
            {
              id: 'episodic-recall',
              type: 'message',
              role: 'developer',
              status: 'completed',
              content: [{ type: 'input_text', text: found.text }],
            },
          ],
          tokenCount: found.tokens,
          episodes: found.episodes,
        };
      },
      async onComplete({ log, outcome }) {
        const sent: Parameters<RemoteLayer['onComplete']>[0] = { transcript: transcriptOf(log.items) };
        const text = outcomeText(outcome);
        if (text !== undefined) sent.outcome = text;
        const episodes = await remote.onComplete(sent);
        return { state: await remote.init(), episodes };
      },
    },
  };
}
