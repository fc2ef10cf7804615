// The OpenAI Agents SDK (@openai/agents) as its users write an agent: a
// function tool and an output type (a zod schema), run against `bonsai
// serve` through the API named by argv[2] ("responses" or "chat"). The
// scripted model calls the tool, then answers in the format: the run must
// end with that output, having run the tool once.
import {
  Agent,
  run,
  tool,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
} from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';

const api = process.argv[2];
if (api !== 'responses' && api !== 'chat') {
  console.error('usage: agents.mjs responses|chat  (BONSAI_URL names the server)');
  process.exit(2);
}
setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL: process.env.BONSAI_URL, apiKey: process.env.BONSAI_API_KEY }));
setOpenAIAPI(api === 'chat' ? 'chat_completions' : 'responses');

let calls = 0;
const weather = tool({
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    calls++;
    return `It is 18 degrees C in ${city}.`;
  },
});
const agent = new Agent({
  name: 'weather',
  instructions: 'Find the weather, then answer in the format.',
  model: process.env.BONSAI_MODEL_ID,
  tools: [weather],
  outputType: z.object({ city: z.string(), temperature: z.number() }),
});
const result = await run(agent, 'What is the weather in Paris?');
const output = result.finalOutput;
console.log(`final output ${JSON.stringify(output)}; the tool ran ${calls} time(s)`);
if (calls !== 1 || output?.city !== 'Paris' || output?.temperature !== 18) {
  console.error('expected one tool call and {"city": "Paris", "temperature": 18}');
  process.exit(1);
}
