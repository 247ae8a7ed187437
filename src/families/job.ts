/** Jobs, on demand and scheduled: batch/v1 Jobs in cluster mode, simulated on the embedded default. */
import { jobFamily } from '../resources/job';
import type { JobExecutor } from '../drivers/job';
import { SimulatedJobExecutor } from '../drivers/simulated/jobs';
import { KubernetesJobExecutor } from '../drivers/kubernetes/jobs';
import { JobReconciler } from '../controllers/job';
import { registerJobRoutes } from '../api/routes/jobs';
import { drivenFamilyModule } from './module';

export const jobModule = drivenFamilyModule<JobExecutor>({
  family: jobFamily,
  drivers: {
    simulated: (ctx) => new SimulatedJobExecutor(ctx.simulation),
    kubernetes: (ctx) =>
      new KubernetesJobExecutor({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        logger: ctx.logger.child({ component: 'job-driver' }),
        imagePullTimeoutMs: ctx.cluster.jobImagePullTimeoutMs,
      }),
  },
  reconcilers: (deps, executor) => [deps.adopt(jobFamily, new JobReconciler(deps.store, deps.writer, executor))],
  routes: (app, ctx, executor) => {
    registerJobRoutes(app, ctx, executor);
  },
});
