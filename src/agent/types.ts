/** The agent as the API sees it: it answers a question in a thread from the team's data. */
export interface Agent {
  answer(team: string, threadId: string, question: string): Promise<string>;
}
