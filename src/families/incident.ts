/** Incidents: what an alert policy saw, opened and resolved by its reconciler, acknowledged by people. */
import { incidentFamily } from '../resources/incident';
import { IncidentReconciler } from '../controllers/incident';
import { registerIncidentRoutes } from '../api/routes/incidents';
import { familyModule } from './module';

export const incidentModule = familyModule({
  families: [incidentFamily],
  reconcilers: (deps) => [deps.adopt(incidentFamily, new IncidentReconciler(deps.store, deps.writer))],
  routes: registerIncidentRoutes,
});
