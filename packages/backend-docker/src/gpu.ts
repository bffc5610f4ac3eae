import type Docker from 'dockerode';
import { CapabilityError, type Operation } from '@berth/core';
import { HINTS } from './capabilities.js';
import { mapDaemonError } from './docker-errors.js';

/** What GET /info says of the engine's runtimes: name -> { path }. */
export type EngineRuntimes = Record<string, { path?: string } | undefined>;

/** The engine's NVIDIA runtime (registered by the NVIDIA Container Toolkit), by name, if it has one. */
export function nvidiaRuntime(runtimes: EngineRuntimes | undefined): string | undefined {
  return Object.entries(runtimes ?? {}).find(([name, runtime]) => /nvidia/i.test(name) || /nvidia/i.test(runtime?.path ?? ''))?.[0];
}

/** HostConfig.DeviceRequests for `count` GPUs, as `docker run --gpus <count>` sends them. */
export function gpuDeviceRequests(count: number): Docker.DeviceRequest[] {
  return count > 0 ? [{ Driver: 'nvidia', Count: count, Capabilities: [['gpu']] }] : [];
}

/**
 * Whether the engine can give containers NVIDIA GPUs, asked once per backend (GET /info's
 * Runtimes); a failed ask is not kept, so the next start asks again.
 */
export class GpuSupport {
  #runtimes: Promise<EngineRuntimes> | undefined;

  constructor(readonly docker: () => Docker) {}

  /** The NVIDIA runtime's name, or undefined when the engine has none. */
  async runtime(ctx: { operation: Operation; backend: string; environmentId?: string }): Promise<string | undefined> {
    this.#runtimes ??= this.docker()
      .info()
      .then((info: { Runtimes?: EngineRuntimes }) => info.Runtimes ?? {});
    try {
      return nvidiaRuntime(await this.#runtimes);
    } catch (error) {
      this.#runtimes = undefined;
      throw mapDaemonError(error, ctx) ?? error;
    }
  }

  /** For a spec asking for GPUs: a CapabilityError naming what the engine lacks, unless it has an NVIDIA runtime. */
  async require(count: number, ctx: { operation: Operation; backend: string; environmentId?: string }): Promise<void> {
    if (count <= 0 || (await this.runtime(ctx)) !== undefined) return;
    const runtimes = Object.keys(await this.#runtimes!).join(', ') || 'none';
    throw new CapabilityError({
      ...ctx,
      capability: 'gpus',
      message: `the ${ctx.backend} backend cannot give this sandbox ${count} GPU(s) (resources.gpus): the engine reports no NVIDIA runtime (its runtimes: ${runtimes}); ${HINTS.gpus}`,
    });
  }
}
