/** The webhook records as the API shows them (src/resources/webhook.ts, docs/api.md "Webhook deliveries"). */
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  filter: Record<string, string | string[]> | null;
  active: boolean;
  rate_limit_per_minute: number;
  disabled_reason: string | null;
  consecutive_failures: number;
  endpoint_health: EndpointHealth;
  status: 'active' | 'inactive' | 'deleted' | 'failed';
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/** Whether the endpoint answers now (docs/api.md, "Endpoint health"). */
export interface EndpointHealth {
  status: 'healthy' | 'failing' | 'disabled';
  recent_failures: number;
  failures_before_disable: number | null;
  last_attempt_at: string | null;
  last_error: string | null;
  next_retry_at: string | null;
}

export type WebhookWithSecret = Webhook & { secret: string };

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface Delivery {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  /** "<n>/15" */
  attempt: string;
  next_retry_at: string | null;
  response_status: number | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** "load_balancer.*, server.running" or one per line, as typed, into the API's list. */
export function eventsFromText(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((part) => part.trim())
    .filter(Boolean);
}

/** One attempt of a delivery, from its attempt log (GET .../deliveries/{delivery_id}). */
export interface DeliveryAttempt {
  attempt: number;
  at: string;
  response_status: number | null;
  /** Null for a listener's delivery, whose CLI makes the request. */
  latency_ms: number | null;
  response_body: string | null;
  error: string | null;
}

export type DeliveryWithAttempts = Delivery & { attempts: DeliveryAttempt[] };
