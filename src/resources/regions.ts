/** The region catalog (docs/api.md: GET /api/v1/regions) and the rule every family applies to `region`. */
import { domainError } from '../lib/errors';
import type { Config } from '../config';

const REGION_NAMES: Record<string, string> = {
  fra1: 'Frankfurt 1',
  ams3: 'Amsterdam 3',
  lon1: 'London 1',
  nyc1: 'New York 1',
  sfo3: 'San Francisco 3',
  sgp1: 'Singapore 1',
};

export interface RegionRecord {
  id: string;
  name: string;
  available: boolean;
}

export function regionCatalog(config: Config): RegionRecord[] {
  return config.regions.map((id) => ({ id, name: REGION_NAMES[id] ?? id, available: !config.unavailableRegions.includes(id) }));
}

export function assertRegionAvailable(config: Config, region: string, field = 'region'): void {
  if (!config.regions.includes(region)) {
    throw domainError('region_unavailable', `Region "${region}" does not exist; see GET /api/v1/regions.`, field);
  }
  if (config.unavailableRegions.includes(region)) {
    throw domainError('region_unavailable', `Region "${region}" is not accepting new resources right now.`, field);
  }
}
