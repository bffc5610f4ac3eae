import type { Backend, Environment, EnvironmentSpecInput, ImageAuth, PoolOptions } from '@berth/core';

/** Ways to make the infrastructure fail from outside, so the suite can check what berth reports. */
export interface ConformanceFaults {
  /**
   * Make the sandbox die from outside (e.g. `docker kill`, delete the pod, terminate the sandbox),
   * found by its id (a pooled sandbox killed while idle has no Environment in the case's hands).
   * Resolves once the engine itself says the sandbox is no longer running (the container stopped,
   * the pod gone), so a case never has to guess how long the engine takes to notice.
   */
  kill?: (env: Pick<Environment, 'id'>) => Promise<void>;
  /**
   * Make one of the sandbox's services (spec.services) die from outside, as `kill` does the
   * sandbox; resolves once the engine says it is no longer running.
   */
  killService?: (env: Pick<Environment, 'id'>, service: string) => Promise<void>;
  /** Remove a cached image so that the next start really pulls it. Must not fail if it is absent. */
  forgetImage?: (ref: string) => Promise<void>;
  /** Remove what building this context left behind (its image, its cached layers). Must not fail if there is nothing. */
  forgetBuild?: (context: string) => Promise<void>;
  /**
   * Ids of the backend's resources (containers, pods, sandboxes...) that carry this process's
   * `berth.session` label (SESSION_ID from @berth/core). Returning environment ids (env.id) where
   * the backend names resources after them makes the messages of failed checks easier to read.
   */
  listLeftovers?: () => Promise<string[]>;
  /**
   * Does the engine still hold this image (a snapshot's `ref`)? Asked of the engine directly, never
   * by pulling: snapshot.roundtrip checks that `remove()` removed the snapshot with it.
   */
  imagePresent?: (ref: string) => Promise<boolean>;
}

export interface ConformanceImages {
  /**
   * An image the backend can start without credentials. It must have a POSIX sh (with printf,
   * kill, read, command -v), cat, tar, sleep, timeout, head, dd, mkdir, rm, ln, pwd, true, and
   * md5sum or sha256sum; /proc must be mounted in the sandbox; stty for the tty cases; nc and
   * nslookup for the network cases. A busybox-static image is enough.
   */
  basic: string;
  /** An image in a registry that refuses anonymous pulls, and the credentials that work. */
  private?: { ref: string; auth: ImageAuth };
  /**
   * A reference that does not exist. When `private` is given it is pulled with `private.auth`,
   * so put it in the same registry (a missing repository must then be not_found, not unauthorized).
   */
  missing?: string;
}

/**
 * A TCP listener on this machine that the backend's `public` sandboxes reach (a bridge's gateway
 * address, the pods' bridge: host-only or loopback addresses only, never the internet), with a DNS
 * responder beside it on the same host, so that "DNS fails on network 'none'" has a positive control.
 */
export interface ReachableListener {
  host: string;
  port: number;
  /** Did a connection send exactly this token and close its side? (`listenForTokens` gives one.) */
  received(token: string): boolean;
  /** UDP port on `host` of a DNS responder that answers A queries for `<label>.berth-conformance.test`. */
  dnsPort: number;
  /** Did a DNS query for exactly this name reach the responder? */
  asked(name: string): boolean;
  close(): Promise<void>;
}

/** A TLS listener (port 443, as SNI allowlists match) that records the server names of the ClientHellos it gets. */
export interface ServerNameListener {
  host: string;
  port: number;
  /** Did a ClientHello naming exactly this server reach the listener? (`listenForServerNames` gives one.) */
  received(name: string): boolean;
  close(): Promise<void>;
}

export interface ConformanceOptions {
  /** The backend's name as it reports it in errors (`error.backend`), e.g. 'docker'. */
  name: string;
  /** Shown in the suite's title beside the name when one backend runs the suite in several configurations, e.g. 'exec transfers'. */
  variant?: string;
  /** Makes the backend under test. Called once per suite; must do no I/O. */
  createBackend: () => Backend;
  images: ConformanceImages;
  /** Merged into every spec the suite starts, e.g. `{ network: 'none' }`. */
  specDefaults?: Partial<EnvironmentSpecInput>;
  faults?: ConformanceFaults;
  /** Multiply every timeout and every "quickly" bound (slow backends, remote clusters). Default 1. */
  timeoutScale?: number;
  /**
   * Starts a listener where this backend's `public` sandboxes reach it, for the network cases: a
   * public sandbox must reach it (so the checks cannot pass vacuously) and a sandbox on network
   * 'none' must not. `listenForTokens(host)` makes one. Without it the network cases are skipped.
   */
  reachableListener?: () => Promise<ReachableListener>;
  /**
   * A second listener, on another address public sandboxes reach, for the allowlist cases (one
   * address allowed, this one not). Without it they are skipped.
   */
  secondListener?: () => Promise<ReachableListener>;
  /**
   * A hostname the backend resolves (e.g. its `resolveHost` option) to reachableListener's host,
   * for the allowlist DNS case: allowed by name, it must resolve inside. Without it that case is skipped.
   */
  allowedName?: string;
  /**
   * A TLS listener on port 443 of an address public sandboxes reach (`listenForServerNames(host)`),
   * for the allowlist case of backends that match names on TLS server names or by proxy. Without it
   * that case is skipped.
   */
  serverNameListener?: () => Promise<ServerNameListener>;
  /**
   * Cases to skip explicitly, by id, each with the reason (e.g. `{ 'image.build': 'no context upload yet' }`).
   * Skipped cases still appear in the output, with the reason. A case skipped for a capability the
   * backend does not claim needs no entry: the suite skips it itself (see CASE_REQUIREMENTS).
   */
  skip?: Readonly<Record<string, string>>;
  /**
   * Run every case through warm pools of this size: the cases' backend is `pooled(createBackend(),
   * pool)`, so each sandbox they get is a claimed one, which must be indistinguishable from a fresh
   * one. The pool cases (pool.*) run either way, on the backend itself.
   */
  pool?: PoolOptions;
}

/** What a case needs beyond the basic image; a case whose needs are not met is skipped, visibly. */
export type CaseNeed = 'faults.kill' | 'faults.killService' | 'faults.forgetImage' | 'faults.listLeftovers' | 'images.private' | 'images.missing';
