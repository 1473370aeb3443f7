// A chat loop with seed 002's memory layer: each line you type is one run of the agent.
// Before the run the layer recalls the earlier runs that fit its token budget (an
// <episodes> block for the prompt); after it, the run and how it ended become episodes.
//
//   EPISODIC_URL=http://127.0.0.1:8765 EPISODIC_KEY=ep_k_... \
//   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... MODEL=gpt-4o-mini \
//   node dist/chat-layer.js
import { createInterface } from 'node:readline';

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText } from 'ai';
import { EpisodicClient, episodicMemory, type LogItem } from 'episodic-agent-memory';

const client = new EpisodicClient({ baseUrl: process.env.EPISODIC_URL ?? 'http://127.0.0.1:8765', key: process.env.EPISODIC_KEY });
const model = createOpenAICompatible({
  name: 'chat',
  baseURL: process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
  apiKey: process.env.OPENAI_API_KEY ?? '',
}).chatModel(process.env.MODEL ?? 'gpt-4o-mini');

const layer = episodicMemory({ client, agent: 'ops-bot', resource: process.env.RESOURCE ?? 'team:payments' });
const BUDGET = 800; // tokens the runtime gives this layer, within layer.budget (300..2000)

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { state } = await layer.hooks.init({});
  const recalled = await layer.hooks.recall({ state, budget: BUDGET });
  const episodes = recalled?.items[0]?.content[0]?.text ?? '';
  const system = `You are an operations assistant.\n${episodes}`;
  let outcome = 'success';
  let answer: string;
  try {
    answer = (await generateText({ model, system, prompt: line })).text;
  } catch (error) {
    outcome = `failed: ${error instanceof Error ? error.message : String(error)}`;
    answer = '(no answer)';
  }
  console.log(`assistant: ${answer}`);
  const log: LogItem[] = [
    { type: 'message', role: 'user', content: line },
    { type: 'message', role: 'assistant', content: answer },
  ];
  const { episodes: made } = await layer.hooks.onComplete({ log: { items: log }, state, outcome });
  console.log(`(memory: ${made.length} episode(s) stored, ${recalled?.tokenCount ?? 0} tokens recalled)`);
}
