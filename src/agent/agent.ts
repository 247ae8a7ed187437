// Placeholder until the agent lands in this change (replaced before commit).
import type { Agent } from './types';
import type { AgentDeps } from './index';
export class DataAgent implements Agent {
  constructor(readonly deps: AgentDeps) {}
  async answer(): Promise<string> {
    return 'not yet';
  }
}
