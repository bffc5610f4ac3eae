import {
  SPECIFICATION_VERSION,
  isBuiltImage,
  type Backend,
  type Capabilities,
  type Environment,
  type EnvironmentSpecInput,
  type PreflightCheck,
  type PreflightReport,
  type SweepOptions,
  type SweepReport,
} from '@berth/core';
import {
  LABEL_MANAGED,
  LABEL_SESSION,
  SandboxEnvironment,
  Sweep,
  assertSupported,
  newEnvironmentId,
  parseEnvironmentSpec,
  preflightFailure,
  preflightSpec,
  probeImage,
  pullFailure,
  startAndCleanUp,
  type CreationLimiter,
} from '@berth/core/backend-kit';
import { BACKEND } from './credentials.js';
import { planImage } from './image.js';
import { planDockerfile } from './dockerfile-build.js';
import { mapModalError } from './modal-errors.js';
import type { ModalBackendOptions } from './options.js';
import { ModalSandbox } from './sandbox.js';
import { ModalShared, creationLimiter } from './shared.js';

const CAPABILITIES: Capabilities = {
  // Modal has GPUs, but a count without a type says too little: not claimed yet.
  gpus: false,
  networkModes: ['public', 'none'],
  networkSwitch: false,
  imageAuth: ['basic', 'secretName', 'dockerConfig', 'aws'],
  mounts: [],
  // Through Modal's builder; COPY/ADD (the context upload) and multi-stage builds are refused at start.
  imageBuild: true,
  execUser: false,
  // Not yet: Modal's exec request can carry a pty_info, but berth's exec path (and the simulator) have none.
  tty: false,
  resourceLimits: { cpus: true, memory: true, storage: true },
};

const HINTS = {
  'mounts.image': 'bake the runtime into the image',
};

export class ModalBackend implements Backend {
  readonly specificationVersion = SPECIFICATION_VERSION;
  readonly name = BACKEND;
  readonly capabilities: Capabilities = CAPABILITIES;
  readonly #options: ModalBackendOptions;
  readonly #limiter: CreationLimiter;
  #shared: ModalShared | undefined;

  constructor(options: ModalBackendOptions) {
    this.#options = options;
    this.#limiter = creationLimiter(options);
  }

  /** Modal's server, the environment and the app sandboxes are made in (no token in it). */
  get target(): string {
    const { environmentName, appName } = this.#options;
    return `${this.#modal.credentials.serverUrl} environment ${environmentName ?? '(default)'} app ${appName ?? 'berth'}`;
  }

  /** The connection and credentials, made on first use: the factory does no I/O. */
  get #modal(): ModalShared {
    return (this.#shared ??= new ModalShared(this.#options));
  }

  environment(input: EnvironmentSpecInput): Environment {
    const spec = parseEnvironmentSpec(input, { backend: BACKEND });
    assertSupported(spec, this.capabilities, BACKEND, HINTS);
    const image = spec.image;
    const id = newEnvironmentId('berth');
    const shared = this.#modal;
    const plan = isBuiltImage(image)
      ? planDockerfile(image.build, this.#options, id).then(({ base, recipe }) => ({ image: base, recipe }))
      : planImage(image.ref, image.auth, this.#options, id).then((p) => ({ image: p }));
    return new SandboxEnvironment({
      backend: BACKEND,
      id,
      spec,
      transport: new ModalSandbox(shared, id, spec, plan),
      limiter: this.#limiter,
      capabilities: this.capabilities,
      transfers: 'exec',
    });
  }

  async start(spec: EnvironmentSpecInput, opts: { signal?: AbortSignal } = {}): Promise<Environment> {
    return startAndCleanUp(this.environment(spec), opts);
  }

  /** The token and the app; the spec; a named secret exists with the keys it needs; the image is pullable. */
  async preflight(input?: EnvironmentSpecInput): Promise<PreflightReport> {
    const checks: PreflightCheck[] = [];
    let appId: string;
    try {
      appId = await this.#modal.app();
      checks.push({ name: 'api', status: 'ok', message: `Modal accepts the token (${this.#modal.credentials.source}); app "${this.#options.appName ?? 'berth'}" is ${appId}` });
    } catch (error) {
      checks.push(preflightFailure('api', mapModalError(error, { operation: 'preflight' }) ?? error));
      return { backend: BACKEND, ok: false, checks };
    }
    if (input !== undefined) {
      const { env, check } = preflightSpec(() => this.environment(input));
      checks.push(check);
      if (!env) return { backend: BACKEND, ok: false, checks };
      checks.push(await this.#checkImage(env));
    }
    return { backend: BACKEND, ok: checks.every((c) => c.status !== 'fail'), checks };
  }

  async #checkImage(env: Environment): Promise<PreflightCheck> {
    const image = env.spec.image;
    try {
      // A Dockerfile is checked for what Modal's builder cannot do, and its base image like any image.
      const plan = isBuiltImage(image) ? (await planDockerfile(image.build, this.#options)).base : await planImage(image.ref, image.auth, this.#options);
      if (plan.named) {
        await this.#modal.control.namedSecret(plan.named.name, plan.named.requiredKeys, this.#options.environmentName);
        return { name: 'image', status: 'ok', message: `the Modal secret "${plan.named.name}" exists with ${plan.named.requiredKeys.join(', ')}; the image itself is checked when Modal pulls it` };
      }
      if (!this.#modal.mayProbe(plan.ref)) return { name: 'image', status: 'warn', message: `${plan.ref.registry} is not among options.probeRegistries: whether ${plan.ref.original} is pullable was not checked` };
      const probe = await probeImage(plan.ref, plan.probeWith);
      if (probe.ok) return { name: 'image', status: 'ok', message: `${plan.ref.original} is pullable${plan.hadCredentials ? ' with the given credentials' : ' anonymously'}` };
      return preflightFailure('image', pullFailure(probe.message, { operation: 'preflight', backend: BACKEND, image: plan.ref.original, hadCredentials: plan.hadCredentials, ...(probe.retryAfterMs !== undefined ? { retryAfterMs: probe.retryAfterMs } : {}) }));
    } catch (error) {
      return preflightFailure('image', mapModalError(error, { operation: 'preflight' }, { path: 'spec.image.auth.secretName' }) ?? error);
    }
  }

  /** Sandboxes of berth's app carrying berth's tags, whose process is gone (or older than asked). */
  async sweep(opts: SweepOptions = {}): Promise<SweepReport> {
    const sweep = new Sweep(BACKEND, opts);
    const { control } = this.#modal;
    try {
      const appId = await this.#modal.app();
      const sandboxes = await control.sandboxList(appId, { [LABEL_MANAGED]: 'true', ...(opts.session ? { [LABEL_SESSION]: opts.session } : {}) });
      for (const sandbox of sandboxes) {
        const tags = Object.fromEntries((sandbox.tags ?? []).map((t) => [t.tag_name ?? '', t.tag_value ?? '']));
        if (!sweep.isOrphan(tags, sandbox.created_at ? sandbox.created_at * 1000 : undefined)) continue;
        const id = sandbox.id ?? '';
        await sweep.remove({
          name: id,
          remove: () => control.sandboxTerminate(id),
          failure: (error) => (error instanceof Error ? error.message : String(error)),
        });
      }
    } catch (error) {
      throw mapModalError(error, { operation: 'sweep' }) ?? error;
    }
    return sweep.report;
  }

  /** Close the HTTP/2 connections (an idle connection would otherwise keep the process up). */
  async close(): Promise<void> {
    await this.#shared?.transport.close();
  }
}

/** The Modal backend. Does no I/O until an environment is started or preflight/sweep runs. */
export function createModalBackend(options: ModalBackendOptions = {}): ModalBackend {
  return new ModalBackend(options);
}
