export { describeBackendConformance } from './suite.js';
export type { CaseNeed, ConformanceFaults, ConformanceImages, ConformanceOptions, ReachableListener, ServerNameListener } from './options.js';
export { clientHello, listenForServerNames } from './server-name-listener.js';
export { listenForTokens } from './listener.js';
export { type DnsResponder, startDnsResponder } from './dns-responder.js';
export { reaches, resolves } from './cases/network-probes.js';
export { execInFlight } from './in-flight.js';
export { CASE_REQUIREMENTS, POOLED_SKIP, POOL_CASES, SERVICE_CASES, capabilityGap, skippedCases, skippedCasesTable } from './requirements.js';
