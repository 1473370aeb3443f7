/** episodic-agent-memory: the episodic HTTP API from TypeScript. The AI SDK tools are in `episodic-agent-memory/ai`. */
export { EpisodicClient, DEFAULT_TIMEOUT_MS, MAX_BATCH, wire, type EpisodicClientOptions } from './client.js';
export {
  EpisodicError,
  InvalidInput,
  UnknownPolicy,
  Unauthenticated,
  Forbidden,
  NotFound,
  ModelMismatch,
  StoreBusy,
  StoreUnavailable,
  EmbedderUnavailable,
  LLMError,
  ServerError,
  errorOf,
  type EpisodicErrorOptions,
} from './errors.js';
export { DEFAULT_RETRIES, BACKOFF_S, MAX_WAIT_S, retryAfter, shouldRetry } from './retry.js';
export { RemoteLayer, newSession, type RemoteLayerOptions, type Order } from './remote-layer.js';
export {
  episodicMemory,
  transcriptOf,
  outcomeText,
  EPISODIC_SLOT,
  LAYER_BUDGET,
  type EpisodicMemoryOptions,
  type EpisodicState,
  type MemoryLayer,
  type LogItem,
  type Recall,
  type RecallItem,
  type Outcome,
} from './layer.js';
export type * from './types.js';
export type { components, paths } from './generated/api.js';
