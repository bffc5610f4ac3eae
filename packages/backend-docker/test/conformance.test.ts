// The behavioural conformance suite, run against a real Docker engine and the private registry on
// 127.0.0.1:5000, with transfers through the engine's archive API.
import { describeBackendConformance } from '@berth/conformance';
import { dockerConformance } from './support/docker-conformance.js';

describeBackendConformance(dockerConformance);
