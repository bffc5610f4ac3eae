// Modal's i6pn (private IPv6 between i6pn-enabled containers of one workspace): one Docker network
// per simulator, internal and with no IPv4 address of this machine on it, on a ULA prefix under
// fdaa::/16 as Modal's. Each i6pn sandbox gets an address of its own there, which it finds as
// Modal's containers do, by resolving `i6pn.modal.local` (an /etc/hosts entry here, DNS on Modal),
// and no RPC tells anyone else (Modal has none either). Sandboxes without i6pn are not on it.
// Simulator gap, said: IPv4 stays on between i6pn containers, and the bridge's IPv6 gateway is
// this machine.
import { randomInt } from 'node:crypto';
import type Docker from 'dockerode';

export const I6PN_HOST = 'i6pn.modal.local';

export class I6pnNetwork {
  readonly #docker: Docker;
  readonly #labels: Record<string, string>;
  readonly #name: string;
  readonly #prefix: string;
  #made: Promise<void> | undefined;
  #next = 16;

  constructor(docker: Docker, instance: string, labels: Record<string, string>) {
    this.#docker = docker;
    this.#labels = labels;
    this.#name = `modal-sim-i6pn-${instance}`;
    this.#prefix = `fdaa:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}:0`;
  }

  get name(): string {
    return this.#name;
  }

  /** A fresh address, the network made on first use. */
  async allocate(): Promise<string> {
    this.#made ??= this.#docker
      .createNetwork({
        Name: this.#name,
        Driver: 'bridge',
        Internal: true,
        EnableIPv6: true,
        CheckDuplicate: true,
        Options: { 'com.docker.network.bridge.inhibit_ipv4': 'true' },
        IPAM: { Config: [{ Subnet: `${this.#prefix}::/64` }] },
        Labels: { ...this.#labels },
      })
      .then(() => undefined);
    await this.#made;
    return `${this.#prefix}::${(this.#next++).toString(16)}`;
  }

  /** Puts a created container on it at `address` (before it starts). */
  async attach(container: Docker.Container, address: string): Promise<void> {
    await this.#docker.getNetwork(this.#name).connect({ Container: container.id, EndpointConfig: { IPAMConfig: { IPv6Address: address } } });
  }

  async close(): Promise<void> {
    if (!this.#made) return;
    await this.#made.catch(() => undefined);
    await this.#docker
      .getNetwork(this.#name)
      .remove()
      .catch(() => undefined);
  }
}
