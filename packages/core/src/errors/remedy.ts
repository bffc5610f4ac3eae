/**
 * What fixes an error, machine-readable: which option, flag or action its message names. A program
 * (berth's CLI) that configures berth its own way says `says` in its own words by the stable `id`,
 * replacing exactly that text, never by matching prose.
 */
export const REMEDY_IDS = [
  /** Credentials for the image's registry: spec.image.auth (the kit's default wording). */
  'image-auth',
  /** spec.image.auth, or Docker's config (docker login): the Docker backend's wording. */
  'image-auth-docker-config',
  /** spec.image.auth, or a Kubernetes pull secret (spec.image.auth.secretName, options.imagePullSecrets). */
  'image-auth-pull-secret',
  /** spec.image.auth, or a Modal secret. */
  'image-auth-modal-secret',
  /** A builder for `image: { build }` on Kubernetes (options.builder), or a prebuilt image. */
  'builder',
  /** Build the image (image.build) with options.builder, said inside a longer hint. */
  'image-build-with-builder',
  /** Which kubeconfig: options.kubeconfig, KUBECONFIG, or ~/.kube/config. */
  'kubeconfig',
  /** A kubeconfig that loads: options.kubeconfig { file, context }, or KUBECONFIG. */
  'kubeconfig-file-context',
  /** The kubeconfig's context. */
  'kube-context',
  /** The Kubernetes namespace (options.namespace). */
  'namespace',
  /** The address a public pod probes to prove NetworkPolicy from inside (options.networkPolicy.probe). */
  'network-probe',
  /** A Modal token: options.tokenId and options.tokenSecret, or MODAL_TOKEN_ID and MODAL_TOKEN_SECRET. */
  'modal-token',
  /** The client version berth sends to Modal (options.clientVersion, options.clientType). */
  'modal-client-version',
  /** Start a job over (fresh: true) or use another job directory. */
  'fresh-job',
  /** Start a journal over (fresh: true) or use another journal path. */
  'fresh-journal',
  /** Run without snapshotSetup. */
  'no-snapshot-setup',
  /** The snapshot setup's command (snapshotSetup.command). */
  'snapshot-setup-command',
] as const;

/** A stable name for what fixes an error; a new one is a new member here (and new words in berth's CLI). */
export type RemedyId = (typeof REMEDY_IDS)[number];

/** What fixes an error: its stable id, and the library's own words for it, exactly as the message says them. */
export interface Remedy {
  readonly id: RemedyId;
  /** The text of the message that names the remedy, in the library's terms (e.g. 'pass options.builder ...'). */
  readonly says: string;
}

/** A message (or a part of one, such as a capability hint) and the remedy it names, made in one place. */
export interface Remedied {
  readonly message: string;
  readonly remedy: Remedy;
  /** The message: a remedied hint put in a template string reads as its text. */
  toString(): string;
}

/**
 * The remedy `id` said as `says`, and the message around it: `compose` puts the words where they
 * belong, so the message always contains them. Spread it into an error's options, e.g.
 * `new ConfigError({ path, ...remedied('kubeconfig', 'pass options.kubeconfig', (fix) => 'no kubeconfig: ' + fix) })`.
 */
export function remedied(id: RemedyId, says: string, compose: (says: string) => string = (s) => s): Remedied {
  const message = compose(says);
  // A hint said in a template string by code written before hints could be remedied still reads right.
  // Not enumerable: spreading a Remedied into an error's options copies only message and remedy.
  return Object.defineProperty({ message, remedy: { id, says } }, 'toString', { value: () => message, enumerable: false }) as Remedied;
}

/** Words for a message that may name a remedy: a plain string, or remedied text. */
export type Hint = string | Remedied;

/** The text of a hint. */
export function hintText(hint: Hint): string;
export function hintText(hint: Hint | undefined): string | undefined;
export function hintText(hint: Hint | undefined): string | undefined {
  return typeof hint === 'object' ? hint.message : hint;
}

/** `{ remedy }` to spread into an error's options when the hint names one, else `{}`. */
export function hintRemedy(hint: Hint | undefined): { remedy?: Remedy } {
  return typeof hint === 'object' ? { remedy: hint.remedy } : {};
}
