/**
 * The API's request and response bodies, generated from its OpenAPI document
 * (`openapi.json` -> `src/generated/api.ts`), under the names this package uses, and the
 * options each method takes, camelCase (sent by the API's names: `asOf` as `as_of`).
 */
import type { components } from './generated/api.js';

type Schemas = components['schemas'];

export type Memory = Schemas['MemoryOut'];
export type Hit = Schemas['HitOut'];
export type RecallResult = Schemas['RecallOut'];
export type RenderResult = Schemas['RenderOut'];
export type IngestReport = Schemas['IngestOut'];
export type ItemError = Schemas['ItemError'];
export type MessageStored = Schemas['MessageOut'];
export type MessagesReport = Schemas['MessagesOut'];
export type Episode = Schemas['EpisodeOut'];
export type ForgetCounts = Schemas['ForgetOut'];
export type MemoryPage = Schemas['MemoryPageOut'];
export type Version = Schemas['VersionOut'];
export type Supersession = Schemas['SupersessionOut'];
export type ServerHealth = Schemas['HealthzOut'];
export type HealthView = Schemas['HealthOut'];
export type LayerState = Schemas['LayerStateOut'];
export type Recalled = Schemas['RecalledOut'];
export type Completed = Schemas['CompletedOut'];
export type SessionEnd = Schemas['SessionEndOut'];
export type WhoAmI = Schemas['WhoAmIOut'];
export type TranscriptItem = Schemas['TranscriptItem'];
export type ErrorBody = Schemas['ErrorOut'];

export type Role = 'user' | 'assistant' | 'tool' | 'system';
export type ScopeName = NonNullable<Schemas['RecallIn']['scope']>;

/** What every call may carry: a signal to abort it, and its own timeout. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Milliseconds before the call is given up (`ServerError` code `timeout`). */
  timeoutMs?: number;
}

/** Whose memory: `workspace` defaults to the key's; a key bound to an agent or crew may name only its own. */
export interface Where extends CallOptions {
  workspace?: string;
  agent?: string;
  crew?: string;
  resource?: string;
  conversation?: string;
}

export interface IngestOptions extends CallOptions {
  /** Journal events in the `episodic ingest` format; sent 1000 per request. */
  events: ReadonlyArray<Record<string, unknown>>;
}

export interface MessageOptions extends CallOptions {
  content: string;
  conversation: string;
  workspace?: string;
  role?: Role;
  agent?: string;
  crew?: string;
  resource?: string;
  name?: string;
  ts?: Date | string;
  id?: string;
}

export interface BatchMessage {
  content: string;
  role?: Role;
  conversation?: string;
  name?: string;
  ts?: Date | string;
  id?: string;
  agent?: string;
  crew?: string;
  resource?: string;
}

export interface MessagesOptions extends CallOptions {
  messages: ReadonlyArray<BatchMessage>;
  conversation?: string;
  workspace?: string;
  agent?: string;
  crew?: string;
  resource?: string;
}

export interface RememberOptions extends Where {
  content: string;
  type?: string;
  importance?: number;
  source?: string;
  evidence?: string;
  payload?: Record<string, unknown>;
  id?: string;
  replaces?: string;
}

export interface RecallOptions extends Where {
  query: string;
  scope?: ScopeName;
  k?: number;
  policy?: string;
  mark?: boolean;
  explain?: boolean;
  walk?: 0 | 1;
  types?: ReadonlyArray<string> | string;
  detail?: 'none' | 'auto' | 'full';
  asOf?: Date | string;
  includeSuperseded?: boolean;
  session?: string;
}

export interface RenderOptions extends RecallOptions {
  maxChars?: number;
}

export interface RecentOptions extends Where {
  limit?: number;
}

export interface ListOptions extends Where {
  scope?: ScopeName;
  types?: ReadonlyArray<string> | string;
  status?: 'active' | 'retired' | 'compacted' | 'superseded';
  limit?: number;
  cursor?: string;
  q?: string;
}

export interface ForgetOptions extends CallOptions {
  workspace?: string;
  agent?: string;
  resource?: string;
  conversation?: string;
  memory?: string;
  olderThanDays?: number;
  all?: boolean;
}

export interface MemoryIdOptions extends CallOptions {
  id: string;
}

export interface UpdateOptions extends MemoryIdOptions {
  content?: string;
  importance?: number;
  payload?: Record<string, unknown>;
}

export interface SupersedeOptions extends CallOptions {
  /** The memory replaced. */
  oldId: string;
  /** A memory's id, or a new text, that replaces it. */
  new: string;
  reason?: string;
}

export interface MemoryHealthOptions extends CallOptions {
  workspace?: string;
  crew?: string;
  history?: number;
}

/** Whose layer, as `MemoryLayer` is created: the key decides the rest. */
export interface LayerWhere extends CallOptions {
  workspace?: string;
  agent?: string;
  crew?: string;
  resource?: string;
}

export interface LayerRecallOptions extends LayerWhere {
  /** Held to 300..2000 by the server; a token is 4 characters. */
  budgetTokens: number;
  query?: string;
  order?: 'recent' | 'relevant';
  policy?: string;
  session?: string;
}

export interface CompleteOptions extends LayerWhere {
  transcript: ReadonlyArray<{ role: Role; content: string; name?: string; ts?: string }>;
  outcome?: string;
  conversation?: string;
  session?: string;
}

export interface EndSessionOptions extends CallOptions {
  session: string;
  workspace?: string;
  outcome?: string;
}
