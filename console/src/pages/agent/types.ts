/** The agent's records (src/resources/agent.ts). */
export interface Thread {
  id: string;
  title: string;
  message_count: number;
  last_message_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface Message {
  id: string;
  thread_id: string;
  role: 'user' | 'assistant' | 'event';
  content: string;
  created_at: string;
}
