/** Alert policies: conditions on a team's resources, judged by the leader, which open and resolve incidents. */
import { alertPolicyFamily } from '../resources/alert';
import { AlertPolicyReconciler } from '../controllers/alert-policy';
import { familyModule } from './module';

export const alertPolicyModule = familyModule({
  families: [alertPolicyFamily],
  reconcilers: (deps) => [deps.adopt(alertPolicyFamily, new AlertPolicyReconciler(deps.store, deps.writer, deps.config.deletedRetentionMs))],
});
