import { hintText, type Hint, type PreflightCheck, type Remedy, type RemedyId } from '@berth/core';

/**
 * berth's libraries say what to change in their own terms (`pass spec.image.auth`, `fresh: true`)
 * and name it with a remedy on the error; a person at the command line changes flags and files.
 * Each remedy, said the CLI's way. Keyed by every id, so a new remedy without words does not compile.
 */
export const CLI_WORDS: Readonly<Record<RemedyId, string>> = {
  'image-auth': 'log in with docker login',
  'image-auth-docker-config': "log in with docker login (berth reads Docker's config, or $DOCKER_CONFIG)",
  'image-auth-pull-secret': "log in with docker login (berth makes the pod a pull secret from Docker's config, or $DOCKER_CONFIG)",
  'image-auth-modal-secret': "log in with docker login (berth hands Docker's credentials to Modal as a secret)",
  builder:
    'give --build-repository <registry/repo> (the local Docker engine builds the image and pushes it there for the cluster to pull), or build and push it yourself and set docker_image',
  'image-build-with-builder': '(environment/Dockerfile, with --build-repository <registry/repo>)',
  kubeconfig: 'give --kubeconfig <file>, set KUBECONFIG, or create ~/.kube/config',
  'kubeconfig-file-context': 'give --kubeconfig <file> (and --context <name>), or set KUBECONFIG',
  'kube-context': 'give --context <name> or --kubeconfig <file>',
  namespace: '--namespace',
  'network-probe': 'give --network-probe <host:port>, an address every public pod reaches',
  'modal-token': 'set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET',
  // The CLI has no flag for Modal's client identity: only a program using the library can set it.
  'modal-client-version': "set it as createModalBackend's clientVersion (and clientType) in a program using @berth/backend-modal: the CLI has no flag for it",
  'fresh-job': 'run again with --fresh to start over (the old job is moved aside, not deleted), or give another --job-dir',
  'fresh-journal': 'run again with --fresh to start over (the old journal is kept beside it), or use another journal path',
  'no-snapshot-setup': 'run without --snapshot-setup',
  'snapshot-setup-command': '--snapshot-setup',
};

/** Anything that may carry a remedy and a cause: a live error or its JSON form (result.json, a preflight check's error). */
interface RemedyCarrier {
  remedy?: unknown;
  cause?: unknown;
}

function asRemedy(value: unknown): Remedy | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { id, says } = value as Record<string, unknown>;
  // A record written by another berth may name a remedy this CLI has no words for: left as the library said it.
  return typeof says === 'string' && says !== '' && typeof id === 'string' && Object.hasOwn(CLI_WORDS, id) ? { id: id as RemedyId, says } : undefined;
}

/** The remedies named along an error's cause chain, outermost first (live errors and serialised ones alike). */
export function remediesOf(error: unknown): Remedy[] {
  const out: Remedy[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 32 && current !== null && typeof current === 'object'; depth++) {
    const remedy = asRemedy((current as RemedyCarrier).remedy);
    if (remedy) out.push(remedy);
    current = (current as RemedyCarrier).cause;
  }
  return out;
}

/**
 * `text` with the words of each remedy (exactly its `says`) said the CLI's way. Longer words first,
 * so that one remedy's words inside another's are not cut into.
 */
export function cliWords(text: string, remedies: Iterable<Remedy | undefined>): string {
  const known = [...remedies].map(asRemedy).filter((r): r is Remedy => r !== undefined);
  known.sort((a, b) => b.says.length - a.says.length);
  let out = text;
  for (const { id, says } of known) out = out.split(says).join(CLI_WORDS[id]);
  return out;
}

/** A preflight check's message in the CLI's words: the remedy it names, and those of the error behind it. */
export function checkInCliWords(check: Pick<PreflightCheck, 'message' | 'remedy' | 'error'>): string {
  return cliWords(check.message, [check.remedy, ...remediesOf(check.error)]);
}

/** A backend's hint (e.g. what to do instead of a capability it lacks) in the CLI's words. */
export function hintInCliWords(hint: Hint): string {
  return typeof hint === 'object' ? cliWords(hint.message, [hint.remedy]) : hintText(hint);
}
