/**
 * Seed 002's hooks (`init`, `recall` within a token budget, `onComplete`) over HTTP, as
 * the Python `Client.layer` gives them: the layer keeps its session between requests, the
 * one named at creation, or one of its own per run, which `onComplete` ends (each memory
 * its recalls returned is reinforced once) and replaces.
 */
import { invalid } from './errors.js';
import type { CallOptions, CompleteOptions, LayerState, LayerWhere, Memory, Recalled } from './types.js';

/** The few client calls a layer makes (an `EpisodicClient` has them). */
export interface LayerCalls {
  layerInit(options: LayerWhere): Promise<LayerState>;
  layerRecall(options: LayerWhere & { budgetTokens: number; query?: string; order?: Order; policy?: string; session?: string }): Promise<Recalled>;
  completeSession(options: CompleteOptions): Promise<{ episodes: Memory[]; reinforced: string[]; conversation: string }>;
}

export type Order = 'recent' | 'relevant';

export interface RemoteLayerOptions {
  workspace?: string;
  agent?: string;
  crew?: string;
  resource?: string;
  /** Kept across runs when named; else the layer starts one of its own for each run. */
  session?: string;
  order?: Order;
  policy?: string;
}

/** A new session's id (a run's, when the caller names none), as the Python layer makes them. */
export function newSession(): string {
  const hex = globalThis.crypto?.randomUUID
    ? globalThis.crypto.randomUUID().replace(/-/g, '')
    : Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16)).join('');
  return `run_${hex.slice(0, 16)}`;
}

export class RemoteLayer {
  readonly where: LayerWhere;
  readonly order: Order;
  readonly policy: string | undefined;
  session: string;
  /** The ids the last session's end reinforced (`onComplete`). */
  reinforced: string[] = [];
  readonly #calls: LayerCalls;
  readonly #ownSession: boolean;

  constructor(calls: LayerCalls, options: RemoteLayerOptions = {}) {
    const { session, order = 'recent', policy, ...where } = options;
    if (order !== 'recent' && order !== 'relevant') throw invalid('order', 'use recent or relevant');
    if (session !== undefined && (typeof session !== 'string' || !session.trim())) {
      throw invalid('session', "expected the session's id (text), or none");
    }
    this.#calls = calls;
    this.where = where;
    this.order = order;
    this.policy = policy;
    this.#ownSession = session === undefined;
    this.session = session ?? newSession();
  }

  /** The layer's state: mode, how many episodes and runs, the last episode's time. */
  init(options: CallOptions = {}): Promise<LayerState> {
    return this.#calls.layerInit({ ...this.where, ...options });
  }

  /** The `<episodes>` block of the runs that fit `budgetTokens` (held to 300..2000). */
  recall(options: { budgetTokens: number; query?: string; order?: Order } & CallOptions): Promise<Recalled> {
    const { order, ...rest } = options;
    const call: Parameters<LayerCalls['layerRecall']>[0] = {
      ...this.where,
      ...rest,
      order: order ?? this.order,
      session: this.session,
    };
    if (this.policy !== undefined) call.policy = this.policy;
    return this.#calls.layerRecall(call);
  }

  /** The run's transcript and outcome become its episodes now; the run's session ends. */
  async onComplete(
    options: Pick<CompleteOptions, 'transcript' | 'outcome' | 'conversation'> & CallOptions,
  ): Promise<Memory[]> {
    const answer = await this.#calls.completeSession({ ...this.where, ...options, session: this.session });
    this.reinforced = answer.reinforced;
    if (this.#ownSession) this.session = newSession();
    return answer.episodes;
  }
}
