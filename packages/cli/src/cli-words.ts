/**
 * berth's libraries say what to change in their own terms (`pass spec.image.auth`, `fresh: true`);
 * a person at the command line changes flags and files. Each hint the libraries give, said the
 * CLI's way. Applied to everything the CLI prints of a library message.
 */
const HINTS: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /pass spec\.image\.auth, or name a pull secret \(spec\.image\.auth\.secretName or options\.imagePullSecrets\)/g,
    "log in with docker login (berth makes the pod a pull secret from Docker's config, or $DOCKER_CONFIG)",
  ],
  [
    /pass spec\.image\.auth \(\{ username, password \} or \{ secretName \} of a Modal secret\)/g,
    "log in with docker login (berth hands Docker's credentials to Modal as a secret)",
  ],
  [/pass spec\.image\.auth or log in with docker login/g, "log in with docker login (berth reads Docker's config, or $DOCKER_CONFIG)"],
  [/pass spec\.image\.auth/g, 'log in with docker login'],
  [
    /pass options\.builder \([^)]*\), or build and push the image and pass its reference/g,
    'give --build-repository <registry/repo> (the local Docker engine builds the image and pushes it there for the cluster to pull), or build and push it yourself and set docker_image',
  ],
  [/pass options\.builder/g, 'give --build-repository <registry/repo>'],
  [/\(image\.build, with options\.builder\)/g, '(environment/Dockerfile, with --build-repository <registry/repo>)'],
  [/pass options\.kubeconfig \{ file, context \} or set KUBECONFIG/g, 'give --kubeconfig <file> (and --context <name>), or set KUBECONFIG'],
  [/pass options\.kubeconfig, set KUBECONFIG, or create ~\/\.kube\/config/g, 'give --kubeconfig <file>, set KUBECONFIG, or create ~/.kube/config'],
  [/set a context, or pass options\.kubeconfig/g, 'give --context <name> or --kubeconfig <file>'],
  [/pass options\.kubeconfig/g, 'give --kubeconfig <file>'],
  [/pass options\.tokenId and options\.tokenSecret, set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET/g, 'set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET'],
  [/use agent 'none' or add one/g, 'use --agent none, or add one'],
  [/pass fresh: true to start over/g, 'run again with --fresh to start over'],
  [/or use another jobDir/g, 'or give another --job-dir'],
  [/set options\.networkPolicy\.probe to an address every public pod reaches/g, 'give --network-probe <host:port>, an address every public pod reaches'],
  [/options\.namespace/g, '--namespace'],
  [/run without snapshotSetup/g, 'run without --snapshot-setup'],
  [/snapshotSetup\.command/g, '--snapshot-setup'],
  // The CLI has no flag for Modal's client identity: only a program using the library can set it.
  [
    /set options\.clientVersion \(and options\.clientType\) to it/g,
    "set it as createModalBackend's clientVersion (and clientType) in a program using @berth/backend-modal: the CLI has no flag for it",
  ],
];

export function cliWords(message: string): string {
  let out = message;
  for (const [pattern, words] of HINTS) out = out.replace(pattern, words);
  return out;
}
