import { ConfigError, isBuiltImage, type EnvironmentSpec, type ImageSource, type PreflightCheck } from '@berth/core';
import {
  LABEL_MANAGED,
  LABEL_SESSION,
  defineBackend,
  snapshotIdOf,
  imageCheck,
  preflightFailure,
  checkFactoryOptions,
  type DefinedBackend,
  type ManagedResource,
} from '@berth/core/backend-kit';
import { clientIdentity } from './client-identity.js';
import { BACKEND, IDENTITY } from './credentials.js';
import { planImage, snapshotPlan } from './image.js';
import { planDockerfile } from './dockerfile-build.js';
import { mapModalError } from './modal-errors.js';
import { OPTION_NAMES, type ModalBackendOptions, type ModalGuardianConfig } from './options.js';
import { ModalSandbox, modalDefaultLifetimeMs, type SandboxImage } from './sandbox.js';
import { sandboxApiOption } from './sandbox-api.js';
import { ModalShared } from './shared.js';
import { CAPABILITIES, HINTS, RENAMED, DEFAULT_CREATION } from './capabilities.js';

/** The Modal backend; `close()` ends its HTTP/2 connections (an idle one would keep the process up). */
export type ModalBackend = DefinedBackend<{ close(): Promise<void> }>;

/** The Modal backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createModalBackend(options: ModalBackendOptions = {}): ModalBackend {
  checkFactoryOptions(options, { known: OPTION_NAMES, renamed: RENAMED, ...IDENTITY });
  // Checked here, before any I/O; each sandbox's timeout_secs applies it.
  const lifetimeMs = modalDefaultLifetimeMs(options);
  // Checked here too: a bad clientVersion or clientType is the caller's, before any I/O.
  clientIdentity(options);
  sandboxApiOption(options);
  const snapshotLifetime: unknown = options.snapshotLifetimeMs;
  if (snapshotLifetime !== undefined && (typeof snapshotLifetime !== 'number' || !Number.isFinite(snapshotLifetime) || snapshotLifetime < 1000)) {
    throw new ConfigError({
      operation: 'config',
      backend: BACKEND,
      path: 'options.snapshotLifetimeMs',
      message: `options.snapshotLifetimeMs is how long Modal keeps a snapshot, in ms (at least 1000); got ${String(snapshotLifetime)}`,
    });
  }
  // The connection and credentials, made on first use: the factory does no I/O.
  let shared: ModalShared | undefined;
  const modal = () => (shared ??= new ModalShared(options));

  const plan = (id: string, spec: EnvironmentSpec): Promise<SandboxImage> => planOf(id, spec.image);
  const planOf = (id: string, image: ImageSource): Promise<SandboxImage> => {
    if (isBuiltImage(image)) return planDockerfile(image.build, options, id).then(({ base, recipe }) => ({ image: base, recipe }));
    const snapshotImageId = snapshotIdOf(image.ref, BACKEND);
    if (snapshotImageId) return Promise.resolve({ image: snapshotPlan(image.ref), snapshotImageId });
    return planImage(image.ref, image.auth, options, id).then((p) => ({ image: p }));
  };

  /** A named secret exists with the keys it needs; else the image (a Dockerfile's base) is asked of its registry. */
  const checkImage = async (spec: EnvironmentSpec): Promise<PreflightCheck> => {
    const image = spec.image;
    const snapshot = isBuiltImage(image) ? undefined : snapshotIdOf(image.ref, BACKEND);
    if (snapshot)
      return { name: 'image', status: 'ok', message: `a snapshot of this backend (Modal image ${snapshot}): started from as it is, nothing to pull` };
    try {
      const p = isBuiltImage(image) ? (await planDockerfile(image.build, options)).base : await planImage(image.ref, image.auth, options);
      if (p.named) {
        await modal().control.namedSecret(p.named.name, p.named.requiredKeys, options.environmentName);
        return {
          name: 'image',
          status: 'ok',
          message: `the Modal secret "${p.named.name}" exists with ${p.named.requiredKeys.join(', ')}; the image itself is checked when Modal pulls it`,
        };
      }
      return await imageCheck(p.ref, p.probeWith, { backend: BACKEND, probeRegistries: options.probeRegistries, hadCredentials: p.hadCredentials });
    } catch (error) {
      return preflightFailure('image', mapModalError(error, { operation: 'preflight' }, { path: 'spec.image.auth.secretName' }) ?? error);
    }
  };

  return defineBackend(
    {
      name: BACKEND,
      capabilities: CAPABILITIES,
      hints: HINTS,
      options,
      defaultCreation: DEFAULT_CREATION,
      transfers: 'exec',
      target: () => `${modal().credentials.serverUrl} environment ${options.environmentName ?? '(default)'} app ${options.appName ?? 'berth'}`,
      transport: (id, spec) => new ModalSandbox(modal(), id, spec, plan(id, spec), lifetimeMs, { planOf: (image) => planOf(id, image) }),
      // Built JS of this package (from src/ and dist/ alike): the guardian process cannot run TypeScript.
      guardian: () => {
        const { tokenId, tokenSecret, serverUrl } = modal().credentials;
        const { ca, appName, environmentName, clientVersion, clientType, sandboxApi } = options;
        const config: ModalGuardianConfig = {
          tokenId,
          tokenSecret,
          serverUrl,
          ...(ca !== undefined ? { ca: ca.toString() } : {}),
          ...(appName !== undefined ? { appName } : {}),
          ...(environmentName !== undefined ? { environmentName } : {}),
          // The guardian says it is the same client: a version Modal refused from the default is refused there too.
          ...(clientVersion !== undefined ? { clientVersion } : {}),
          ...(clientType !== undefined ? { clientType } : {}),
          // Its sweep lists with the same generation (V2's list holds V1 and V2 sandboxes alike).
          ...(sandboxApi !== undefined ? { sandboxApi } : {}),
        };
        return { module: new URL('../dist/guardian.js', import.meta.url), config };
      },
      async checkApi() {
        try {
          const appId = await modal().app();
          return [
            { name: 'api', status: 'ok', message: `Modal accepts the token (${modal().credentials.source}); app "${options.appName ?? 'berth'}" is ${appId}` },
          ];
        } catch (error) {
          return [preflightFailure('api', mapModalError(error, { operation: 'preflight' }) ?? error)];
        }
      },
      checkSpec: async (spec) => (spec ? [await checkImage(spec)] : []),
      // Sandboxes of berth's app carrying berth's tags.
      async listManaged({ session }) {
        const { sandboxes: rpcs } = modal();
        try {
          const appId = await modal().app();
          const sandboxes = await rpcs.list(appId, { [LABEL_MANAGED]: 'true', ...(session ? { [LABEL_SESSION]: session } : {}) });
          return sandboxes.map((sandbox): ManagedResource => {
            const id = sandbox.id ?? '';
            return {
              name: id,
              labels: Object.fromEntries((sandbox.tags ?? []).map((t) => [t.tag_name ?? '', t.tag_value ?? ''])),
              ...(sandbox.created_at ? { createdAtMs: sandbox.created_at * 1000 } : {}),
              // V1 or V2 by the id's shape, as Modal's SDK decides for a listed sandbox.
              remove: () => rpcs.terminate(id),
              failure: (error) => (error instanceof Error ? error.message : String(error)),
            };
          });
        } catch (error) {
          throw mapModalError(error, { operation: 'sweep' }) ?? error;
        }
      },
    },
    {
      async close(): Promise<void> {
        await shared?.transport.close();
      },
    },
  );
}
