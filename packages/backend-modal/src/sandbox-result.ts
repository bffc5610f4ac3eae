// How a Modal sandbox's end (its GenericResult) reads in berth's terms. Modal names the way a
// sandbox ended with a GenericStatus; berth's other backends name the same events with the
// container runtime's words ('OOMKilled' on Docker and Kubernetes, 'Evicted' on Kubernetes), so a
// report or a retry policy that looks at SandboxLostError.lastState sees one word per event
// whichever backend ran the task. Modal's own name stays beside it: it is what Modal's
// documentation and support speak of.
import type { GenericResult } from './wire/index.js';

/** Memory events: berth's cross-backend word, and what Modal's status says happened. */
const MEMORY_ENDS: Record<string, { word: 'OOMKilled' | 'Evicted'; what: string }> = {
  // The kernel's OOM killer ended the sandbox's processes: what Docker's State.OOMKilled and a
  // Kubernetes container's terminated.reason 'OOMKilled' report.
  GENERIC_STATUS_KERNEL_OOM_KILL: { word: 'OOMKilled', what: 'the kernel killed the sandbox for running out of memory' },
  // Modal took the sandbox away over memory (its memory manager, or thrashing on the worker): the
  // sandbox was ended from outside, as a Kubernetes eviction ends a pod.
  GENERIC_STATUS_MEMORY_MANAGER_EVICTION: { word: 'Evicted', what: "Modal's memory manager evicted the sandbox" },
  GENERIC_STATUS_MEMORY_THRASHING_EVICTION: { word: 'Evicted', what: 'Modal evicted the sandbox for memory thrashing' },
};

/**
 * Modal's status without its prefix ('KERNEL_OOM_KILL'). A number is a status this build of berth
 * does not know (the codec keeps unknown enum numbers as numbers): 'status 11'.
 */
export function statusName(status: GenericResult['status']): string {
  if (typeof status === 'number') return `status ${status}`;
  if (status === undefined) return 'UNSPECIFIED';
  return status.replace(/^GENERIC_STATUS_/, '');
}

/**
 * The state berth reports for an ended sandbox (SandboxLostError.lastState): 'OOMKilled
 * (KERNEL_OOM_KILL: the kernel killed ...)' or 'Evicted (...)' for memory events, else Modal's
 * name ('TERMINATED'); then Modal's exception text when it gave one.
 */
export function endReason(result: GenericResult): string {
  const name = statusName(result.status);
  const memory = typeof result.status === 'string' ? MEMORY_ENDS[result.status] : undefined;
  const state = memory ? `${memory.word} (${name}: ${memory.what})` : name;
  const exception = result.exception?.trim();
  return exception ? `${state}: ${exception}` : state;
}
