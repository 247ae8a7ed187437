/** Picks the provider for a configuration. */
import type { Logger } from 'pino';
import type { Config } from '../config';
import { kubeConfigFor } from '../store';
import { KubernetesJobExecutor } from './kubernetes-jobs';
import { SimulatedProvider } from './simulated';
import type { Provider } from './types';

export function createProvider(config: Config, logger: Logger): Provider {
  const kubernetes = config.kubernetes;
  if (kubernetes?.jobDriver !== 'kubernetes') return new SimulatedProvider(config.simulation);
  // Jobs run for real as batch/v1 Jobs; the other families stay simulated until they have drivers.
  return new SimulatedProvider(
    config.simulation,
    (recordOutcome) =>
      new KubernetesJobExecutor({
        kubeConfig: kubeConfigFor(kubernetes),
        systemNamespace: kubernetes.systemNamespace,
        logger: logger.child({ component: 'job-driver' }),
        recordOutcome,
        imagePullTimeoutMs: kubernetes.jobImagePullTimeoutMs,
      }),
  );
}
