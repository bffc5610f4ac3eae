// Every RPC the simulator serves is one of Modal's, with the messages and streaming the pinned SDK's
// service descriptors give it: a V2 RPC that reuses a V1 message, or answers Empty, cannot be
// served under a guessed <Name>Request / <Name>Response.
import { describe, expect, it } from 'vitest';
import { type ControlPlaneDeps, controlPlaneMethods } from '../../src/modal-sim/control-plane.js';
import { type RouterDeps, routerMethods } from '../../src/modal-sim/router.js';
import { readSdkDescriptors } from '../../src/modal-sim/sdk-schema.js';

describe('the methods the simulator serves', () => {
  it("match the SDK's service descriptors: request, response, streaming", () => {
    // Handlers are not called: the tables only need the deps at call time.
    const served = new Map([...controlPlaneMethods({} as ControlPlaneDeps).methods, ...routerMethods({} as RouterDeps).methods]);
    const services = readSdkDescriptors().services;
    const mismatches: string[] = [];
    for (const [path, method] of served) {
      const [, service = '', rpc = ''] = path.split('/');
      const sdk = services[service]?.[rpc];
      const ours = { input: method.request, output: method.response, server_streaming: method.stream !== undefined, client_streaming: false };
      if (!sdk) mismatches.push(`${path}: not in the SDK's descriptors (add it to dump-descriptors.py's RPCS)`);
      else if (JSON.stringify(ours) !== JSON.stringify(sdk)) mismatches.push(`${path}: served as ${JSON.stringify(ours)}, the SDK has ${JSON.stringify(sdk)}`);
    }
    expect(mismatches).toStrictEqual([]);
    expect(served.size).toBeGreaterThanOrEqual(18);
  });
});
