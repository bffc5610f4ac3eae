import type { ImageRef } from '@berth/core';
import { clientIdentity } from './client-identity.js';
import { resolveCredentials, type ModalCredentials } from './credentials.js';
import { ImageBuilds } from './image.js';
import type { ModalBackendOptions } from './options.js';
import { serverWarning } from './server-warnings.js';
import { sandboxApiOption } from './sandbox-api.js';
import { ControlPlane, GrpcTransport, SandboxRpcs, type SandboxApiVersion } from './wire/index.js';

/** What every sandbox of one backend instance shares: the connection, the app, the image builds. Made on first use. */
export class ModalShared {
  readonly options: ModalBackendOptions;
  readonly credentials: ModalCredentials;
  readonly transport: GrpcTransport;
  readonly control: ControlPlane;
  /** The sandbox RPCs, V1 or V2 (sandbox-rpcs.ts). */
  readonly sandboxes: SandboxRpcs;
  /** options.sandboxApi, checked. */
  readonly sandboxApi: SandboxApiVersion;
  readonly images: ImageBuilds;
  #app: Promise<string> | undefined;

  constructor(options: ModalBackendOptions) {
    this.options = options;
    this.credentials = resolveCredentials(options);
    const identity = clientIdentity(options);
    this.transport = new GrpcTransport({ userAgent: identity.userAgent, onWarning: serverWarning });
    const endpoint = { origin: new URL(this.credentials.serverUrl).origin, ...(options.ca ? { ca: options.ca } : {}) };
    this.control = new ControlPlane(this.transport, {
      endpoint,
      tokenId: this.credentials.tokenId,
      tokenSecret: this.credentials.tokenSecret,
      clientVersion: identity.version,
      clientType: identity.type,
    });
    this.images = new ImageBuilds(this.control);
    this.sandboxApi = sandboxApiOption(options);
    this.sandboxes = new SandboxRpcs(this.control, this.sandboxApi);
  }

  /** The app's id: got or made once per backend instance (asked again after a failure). */
  app(signal?: AbortSignal): Promise<string> {
    if (!this.#app) {
      this.#app = this.control.appGetOrCreate(this.options.appName ?? 'berth', this.options.environmentName, true, signal);
      this.#app.catch(() => (this.#app = undefined));
    }
    return this.#app;
  }

  /** May berth ask this registry directly (options.probeRegistries)? */
  mayProbe(ref: ImageRef): boolean {
    return !this.options.probeRegistries || this.options.probeRegistries.includes(ref.registry);
  }
}
