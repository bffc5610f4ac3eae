export { describeBackendConformance } from './suite.js';
export type { CaseNeed, ConformanceFaults, ConformanceImages, ConformanceOptions } from './options.js';
export { CASE_REQUIREMENTS, capabilityGap, skippedCases, skippedCasesTable } from './requirements.js';
