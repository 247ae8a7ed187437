/** Picks the provider for a configuration. */
import type { Logger } from 'pino';
import type { Config } from '../config';
import { SimulatedProvider } from './simulated';
import type { Provider } from './types';

export function createProvider(config: Config, _logger: Logger): Provider {
  return new SimulatedProvider(config.simulation);
}
