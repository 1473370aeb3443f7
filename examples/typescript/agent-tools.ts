// An agent with seed 004's memory: the entries that match the user's message injected as
// a <memory> block, and the recall_memory and remember tools for the model to call.
//
//   EPISODIC_URL=http://127.0.0.1:8765 EPISODIC_KEY=ep_k_... \
//   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... MODEL=gpt-4o-mini \
//   node dist/agent-tools.js "Globex's webhooks fail again; what did we find last time?"
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs } from 'ai';
import { EpisodicClient } from 'episodic-agent-memory';
import { episodicAgentMemory } from 'episodic-agent-memory/ai';

const client = new EpisodicClient({ baseUrl: process.env.EPISODIC_URL ?? 'http://127.0.0.1:8765', key: process.env.EPISODIC_KEY });
const model = createOpenAICompatible({
  name: 'agent',
  baseURL: process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
  apiKey: process.env.OPENAI_API_KEY ?? '',
}).chatModel(process.env.MODEL ?? 'gpt-4o-mini');

// Seed 004's scope: this agent's memories about this customer.
const memory = episodicAgentMemory(client, { agent: 'support-bot', resource: process.env.RESOURCE ?? 'customer:globex' });

const message = process.argv.slice(2).join(' ') || 'What do we know about Globex?';
const block = await memory.autoInject(message); // "" when nothing matches
const result = await generateText({
  model,
  system: `You are a support agent. Save what you learn with the remember tool.\n${block}`,
  prompt: message,
  tools: memory.tools,
  stopWhen: stepCountIs(5),
});
for (const step of result.steps) {
  for (const call of step.toolCalls) console.log(`tool: ${call.toolName} ${JSON.stringify(call.input)}`);
}
console.log(`assistant: ${result.text}`);
