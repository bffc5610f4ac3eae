export { describeBackendConformance } from './suite.js';
export type { CaseNeed, ConformanceFaults, ConformanceImages, ConformanceOptions } from './options.js';
