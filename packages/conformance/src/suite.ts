import { afterAll, describe, expect } from 'vitest';
import { capabilityCases } from './cases/capabilities.js';
import { allowlistCases } from './cases/network-allowlist.js';
import { allowlistTlsCases } from './cases/network-allowlist-tls.js';
import { errorCases } from './cases/errors.js';
import { execCases } from './cases/exec.js';
import { execStdinCases } from './cases/exec-stdin.js';
import { execTtyCases } from './cases/exec-tty.js';
import { execUserCases } from './cases/exec-user.js';
import { imageCases } from './cases/images.js';
import { imageBuildCases } from './cases/images-build.js';
import { lifecycleCases } from './cases/lifecycle.js';
import { lostCases } from './cases/lost.js';
import { processCases } from './cases/processes.js';
import { mountCases } from './cases/mounts.js';
import { poolCases } from './cases/pool.js';
import { snapshotCases } from './cases/snapshot.js';
import { serviceCases } from './cases/services.js';
import { transferCases } from './cases/transfer.js';
import { transferAbortCases } from './cases/transfer-abort.js';
import { describeError, Harness } from './harness.js';
import type { ConformanceOptions } from './options.js';
import { CASE_REQUIREMENTS } from './requirements.js';

/**
 * Register berth's behavioural conformance suite for one backend with vitest. Call it at the top
 * level of a test file. Cases whose fault hook or image is not provided are registered as skipped,
 * with the reason in their title; `options.skip` skips cases by id, visibly too.
 */
export function describeBackendConformance(options: ConformanceOptions): void {
  if (!options.name) throw new Error('describeBackendConformance: options.name is required');
  if (typeof options.createBackend !== 'function') throw new Error('describeBackendConformance: options.createBackend is required');
  if (!options.images?.basic) throw new Error('describeBackendConformance: options.images.basic is required');
  const h = new Harness(options);

  const variant = [options.variant, options.pool ? `through warm pools of ${options.pool.size}` : undefined].filter(Boolean).join(', ');
  describe(`berth conformance: ${options.name}${variant ? ` (${variant})` : ''}`, () => {
    lifecycleCases(h);
    execCases(h);
    execStdinCases(h);
    execUserCases(h);
    execTtyCases(h);
    transferCases(h);
    transferAbortCases(h);
    lostCases(h);
    processCases(h);
    capabilityCases(h);
    allowlistCases(h);
    allowlistTlsCases(h);
    mountCases(h);
    imageCases(h);
    imageBuildCases(h);
    errorCases(h);
    poolCases(h);
    snapshotCases(h);
    serviceCases(h);

    describe('cleanup', () => {
      h.defineCase({
        id: 'cleanup.no-leftovers',
        title: 'after every environment is torn down, no labelled resource of this session is left',
        needs: ['faults.listLeftovers'],
        timeoutMs: 60_000,
        run: async () => {
          const failures = await h.releaseAll();
          expect(failures.map(describeError), 'teardown failures').toEqual([]);
          await h.closePools();
          expect(await options.faults!.listLeftovers!()).toEqual([]);
        },
      });
    });

    // The last hook of the suite: every child group's afterAll has run by now.
    afterAll(async () => {
      // The requirement table is what the README's skip list is made from: it may name no case that is gone.
      const unknown = Object.keys(CASE_REQUIREMENTS).filter((id) => !h.caseIds.includes(id));
      if (unknown.length > 0) throw new Error(`CASE_REQUIREMENTS names case(s) the suite does not have: ${unknown.join(', ')}`);
      // The output says what this backend did not run and why, whatever the reporter shows of skipped tests.
      if (h.skipped.length > 0 || h.partial.length > 0) {
        const lines = h.skipped.map((s) => `  [${s.id}] ${s.reason}`);
        const partial = h.partial.map((s) => `  [${s.id}] ${s.reason}`);
        console.info(
          `berth conformance ${options.name}: ${h.caseIds.length - h.skipped.length} of ${h.caseIds.length} cases ran` +
            (lines.length > 0 ? `; skipped:\n${lines.join('\n')}` : '') +
            (partial.length > 0 ? `\nran without a check:\n${partial.join('\n')}` : ''),
        );
      }
      const failures = await h.releaseAll();
      await h.closePools();
      await h.removeTempDirs();
      if (failures.length > 0) {
        throw new Error(`teardown failed for ${failures.length} environment(s): ${failures.map(describeError).join('; ')}`);
      }
      const list = options.faults?.listLeftovers;
      if (list) {
        const left = await list();
        if (left.length > 0) throw new Error(`the ${options.name} conformance suite left ${left.length} resource(s) behind: ${left.join(', ')}`);
      }
    }, h.hookTimeout());
  });
}
