/**
 * When a 503 is tried again, as the Python client does (`episodic.client.calls`): the
 * database busy or unreachable, the embedder loading.
 */

/** Tries in all, the first included. */
export const DEFAULT_RETRIES = 3;
/** The doubling backoff's first wait when `Retry-After` says nothing, in seconds. */
export const BACKOFF_S = 0.5;
/** A `Retry-After` longer than this is not waited for: the error is thrown at once. */
export const MAX_WAIT_S = 30;

/**
 * Seconds to wait before attempt `attempt + 1` (attempts count from 0): what
 * `Retry-After` says (seconds or an HTTP date), else a doubling backoff from `BACKOFF_S`.
 */
export function retryAfter(header: string | null, attempt: number, now: number = Date.now()): number {
  if (header) {
    const text = header.trim();
    if (/^\d+$/.test(text)) return Number(text);
    const at = Date.parse(text);
    if (!Number.isNaN(at)) return Math.max(0, (at - now) / 1000);
  }
  return BACKOFF_S * 2 ** attempt;
}

/** A 503 is worth another try while attempts remain and the wait is reasonable. */
export function shouldRetry(status: number, waitS: number, attempt: number, attempts: number): boolean {
  return status === 503 && attempt + 1 < attempts && waitS <= MAX_WAIT_S;
}
