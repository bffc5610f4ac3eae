import { EventEmitter } from 'eventemitter3';

/** Event names to listener signatures, e.g. RunEvents. */
export type EventMap<E> = { [K in keyof E]: (...args: never[]) => void };

/**
 * A typed event channel: what runTrials reports a run through and what an Environment reports its
 * phases through. The implementation (eventemitter3) stays internal; this is the whole surface.
 */
export interface TypedEvents<E extends EventMap<E>> {
  on<K extends keyof E & string>(event: K, listener: E[K]): this;
  once<K extends keyof E & string>(event: K, listener: E[K]): this;
  off<K extends keyof E & string>(event: K, listener?: E[K]): this;
  emit<K extends keyof E & string>(event: K, ...args: Parameters<E[K]>): boolean;
  listenerCount(event: keyof E & string): number;
}

/** A new event channel, e.g. `createEvents<RunEvents>()` for runTrials' `events` option. */
export function createEvents<E extends EventMap<E>>(): TypedEvents<E> {
  return new EventEmitter() as unknown as TypedEvents<E>;
}
