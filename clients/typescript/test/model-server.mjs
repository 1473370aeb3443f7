// A scripted OpenAI-compatible chat-completions server for the tests: each request is
// answered by the next step of a script (a tool call, or text made from what the request
// holds), and every request is kept so a test can read what the model was sent.
import { createServer } from 'node:http';

/**
 * `script`: functions of the request body, each returning `{ text }` or
 * `{ toolCall: { name, args } }`; the last one repeats. Resolves to { baseURL, requests, close }.
 */
export async function scriptedModel(script) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    requests.push(body);
    const step = script[Math.min(requests.length - 1, script.length - 1)](body);
    const message = step.toolCall
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${requests.length}`,
              type: 'function',
              function: { name: step.toolCall.name, arguments: JSON.stringify(step.toolCall.args) },
            },
          ],
        }
      : { role: 'assistant', content: step.text };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message, finish_reason: step.toolCall ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      }),
    );
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${server.address().port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The content of the last tool message a request carries (what a tool answered). */
export function lastToolResult(body) {
  const tool = [...body.messages].reverse().find((m) => m.role === 'tool');
  return tool ? String(tool.content) : '';
}
