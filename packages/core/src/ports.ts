// Reaching a port inside a sandbox from the runner (Environment.port): the public type.

/** A local address that reaches a port inside the sandbox (Environment.port); closed at teardown at the latest. */
export interface PortForward {
  /** Where to connect on this machine: always loopback. */
  readonly host: string;
  readonly port: number;
  /** The port inside the sandbox it reaches (on the sandbox's 127.0.0.1). */
  readonly remotePort: number;
  /** Stops listening and cuts its connections; idempotent. */
  close(): Promise<void>;
}
