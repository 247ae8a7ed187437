/** AI-agent threads and their messages. */
import { messageFamily, threadFamily } from '../resources/agent';
import { registerAgentRoutes } from '../api/routes/agent';
import { familyModule } from './module';

export const agentModule = familyModule({
  families: [threadFamily, messageFamily],
  routes: registerAgentRoutes,
});
