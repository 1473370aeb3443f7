/**
 * The API's errors as classes: the error body `{"error": {"code", "field", "message"}}`
 * picks the class by its `code`, as the Python client's `episodic.client.answers.error_of`
 * picks the exception `Episodic` raises for the same thing.
 */

/** Every error this package throws for an answer of the server, or for no answer. */
export class EpisodicError extends Error {
  /** The HTTP status (0: no answer: unreachable, timed out). */
  readonly status: number;
  /** The API's error code: `invalid_input`, `not_found`, `store_busy` ... */
  readonly code: string;
  /** The request field the error is about (`transcript[2].role`), when it names one. */
  readonly field: string | null;
  /**
   * The server's id of the request (its `X-Request-ID`: the caller's own when it sent a
   * well-formed one), which names the request in the server's log lines; null when there
   * was no answer.
   */
  readonly requestId: string | null;

  constructor(message: string, options: EpisodicErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.code = options.code;
    this.field = options.field ?? null;
    this.requestId = options.requestId ?? null;
  }
}

/** What an `EpisodicError` is made of. */
export interface EpisodicErrorOptions {
  status: number;
  code: string;
  field?: string | null;
  requestId?: string | null;
  cause?: unknown;
}

/** A bad field (422): `field` names it, e.g. `budget_tokens` or `transcript[2].role`. */
export class InvalidInput extends EpisodicError {
  declare readonly field: string;
}
/** A recall named a policy the server does not know (422, field `policy`). */
export class UnknownPolicy extends InvalidInput {}
/** No key, or a key the server does not know (401). */
export class Unauthenticated extends EpisodicError {}
/** The key may not do this, or may not name this agent or crew (403). */
export class Forbidden extends EpisodicError {}
/** No such memory, session ... here (404). */
export class NotFound extends EpisodicError {}
/** The database was made with another embedding model (409). */
export class ModelMismatch extends EpisodicError {}
/** The database is busy (503, retried as `Retry-After` says). */
export class StoreBusy extends EpisodicError {}
/** The database cannot be reached (503). */
export class StoreUnavailable extends EpisodicError {}
/** The embedding model is loading or failed (503). */
export class EmbedderUnavailable extends EpisodicError {}
/** The server's language model failed (502). */
export class LLMError extends EpisodicError {}
/**
 * Any other answer (an unexpected 500, a status the API does not document), or none at
 * all: `status` 0 with `code` `unreachable` or `timeout`.
 */
export class ServerError extends EpisodicError {}

const BY_CODE: Record<string, typeof EpisodicError> = {
  unauthenticated: Unauthenticated,
  forbidden: Forbidden,
  not_found: NotFound,
  model_mismatch: ModelMismatch,
  store_busy: StoreBusy,
  store_unavailable: StoreUnavailable,
  embedder_unavailable: EmbedderUnavailable,
  llm_failed: LLMError,
};

/**
 * The error for an answer of `status` whose body is `body` (parsed JSON, or text). Its
 * `requestId` is the one the error body names, else `requestId` (the answer's
 * `X-Request-ID` header: a body that is not the API's, from a proxy say, names none).
 */
export function errorOf(status: number, body: unknown, requestId: string | null = null): EpisodicError {
  const detail = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  if (typeof detail !== 'object' || detail === null) {
    const shown = typeof body === 'string' ? body : JSON.stringify(body);
    return new ServerError(`HTTP ${status} error: unexpected answer: ${String(shown).slice(0, 200)}`, {
      status,
      code: 'error',
      requestId,
    });
  }
  const { code: rawCode, field: rawField, message: rawMessage, request_id: sent } = detail as Record<string, unknown>;
  const code = typeof rawCode === 'string' && rawCode ? rawCode : 'error';
  const field = typeof rawField === 'string' ? rawField : null;
  const message = typeof rawMessage === 'string' ? rawMessage : '';
  const id = typeof sent === 'string' && sent ? sent : requestId;
  if (code === 'unknown_policy') {
    return new UnknownPolicy(message, { status, code, field: field ?? 'policy', requestId: id });
  }
  if (code === 'invalid_input' || code === 'bad_request' || code === 'payload_too_large' || status === 422) {
    return new InvalidInput(field ? `${field}: ${message}` : message, { status, code, field: field ?? 'body', requestId: id });
  }
  const Kind = BY_CODE[code];
  if (Kind !== undefined) return new Kind(message, { status, code, field, requestId: id });
  if (code === 'error' && status === 400) return new EpisodicError(message, { status, code, field, requestId: id });
  return new ServerError(`HTTP ${status} ${code}: ${message}`, { status, code, field, requestId: id });
}

/** A field this client checks before sending, named as the API names it. */
export function invalid(field: string, message: string): InvalidInput {
  return new InvalidInput(`${field}: ${message}`, { status: 0, code: 'invalid_input', field });
}
