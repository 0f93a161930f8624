// A language model, when the node is configured with one (docs/sections/starter-agents.md "A model when the host
// has one"): any OpenAI-compatible endpoint (a llama.cpp, Ollama or vLLM server on the host, or a provider), named
// by the secrets the agent declares: OPENAI_BASE_URL, OPENAI_MODEL, and OPENAI_API_KEY (optional for a local
// server). Without them the agent works without a model. Copied into each agent that uses one;
// test/agents/manifests.test.ts keeps the copies identical.
import { declaredSecret } from './agent-io.mjs';

export const MODEL_SECRETS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL'];
const TIMEOUT_MS = 60_000;

/** The configured model, or null: both the base URL and the model's name must be given. */
export function configuredModel() {
  const baseURL = declaredSecret('OPENAI_BASE_URL');
  const model = declaredSecret('OPENAI_MODEL');
  if (baseURL === null || model === null) return null;
  let host;
  try {
    host = new URL(baseURL).host;
  } catch {
    throw new Error('the secret OPENAI_BASE_URL is not a URL (for example http://127.0.0.1:8080/v1)');
  }
  return { baseURL, host, model, apiKey: declaredSecret('OPENAI_API_KEY') };
}

/**
 * One chat completion: `{text, model}`, `model` being the name the endpoint says answered. Through the maintained
 * `openai` client (vendored at build), which retries what is safe to retry.
 */
export async function complete(config, messages, { maxTokens = 600, deadlineMs } = {}) {
  const { OpenAI } = await import('./vendor/openai.mjs');
  // A local server needs no key; the client insists on one, and a server that needs none ignores it.
  const client = new OpenAI({ baseURL: config.baseURL, apiKey: config.apiKey ?? 'none', timeout: Math.min(TIMEOUT_MS, deadlineMs ?? TIMEOUT_MS), maxRetries: 1 });
  const response = await client.chat.completions.create({ model: config.model, messages, max_tokens: maxTokens, temperature: 0 });
  const text = response.choices?.[0]?.message?.content;
  if (typeof text !== 'string' || text.trim() === '') throw new Error(`the model ${config.model} answered nothing`);
  return { text: text.trim(), model: response.model || config.model };
}

/** `complete`, or `{error}` saying why not: a model that fails leaves the agent's own answer standing. */
export async function completeOrExplain(config, messages, options) {
  try {
    return await complete(config, messages, options);
  } catch (error) {
    return { error: `${config.model} at ${config.host}: ${error.message}` };
  }
}
