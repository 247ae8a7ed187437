/** The manifests in examples/ (examples/README.md): each file's object and the state it settles in. */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../src/lib/package-root';

export const EXAMPLES = path.join(packageRoot(__dirname), 'examples');

/** Each example: its file, short name, object name, API path and the ready state examples/README.md names. */
export const EXAMPLES_BY_FILE = [
  { file: 'load-balancer.yaml', short: 'cplb', name: 'web-frontend', path: 'load-balancers', ready: 'running' },
  { file: 'vpn-gateway.yaml', short: 'cpvpn', name: 'office-link', path: 'vpn-gateways', ready: 'active' },
  { file: 'server.yaml', short: 'cpsvr', name: 'app-1', path: 'servers', ready: 'running' },
  { file: 'bucket.yaml', short: 'cpbkt', name: 'build-artifacts', path: 'object-storage', ready: 'available' },
  { file: 'file-share.yaml', short: 'cpfs', name: 'shared-home', path: 'file-storage', ready: 'available' },
  { file: 'cloud-job.yaml', short: 'cpjob', name: 'nightly-report', path: 'jobs', ready: 'completed' },
];

export const exampleFiles = () => fs.readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml'));
