/** What the agent asks of either tunnel type. */
import type { VpnAgentConfig } from './config';

export interface TunnelReading {
  up: boolean;
  bytesSent: number;
  bytesReceived: number;
  lastHandshake: Date | null;
}

export interface Tunnel {
  /** Brings the tunnel to this configuration (starting its daemon when needed); idempotent. */
  apply(config: VpnAgentConfig): Promise<void>;
  /** Read live from the tunnel's own tool. */
  read(): Promise<TunnelReading>;
  /** False once the daemon behind the tunnel has died: the agent applies again. */
  healthy(): boolean;
  /** Takes the tunnel down and removes its files. */
  stop(): Promise<void>;
}
