// The third-party code the reference agents run, bundled by esbuild into agents/<agent_id>/vendor/ at build time
// (scripts/build.mjs), so each agent's directory stays a bundle that stands alone (uploaded and installed as it is)
// and a release carries them without a node_modules of theirs. The sources are devDependencies; vendor/ is not
// committed (.gitignore). Each entry is the module's whole text: what the agent imports from it.
import { build } from 'esbuild';
import { rm } from 'node:fs/promises';

const OPENAI = "export { default as OpenAI } from 'openai';";

export const AGENT_VENDOR = {
  agent_dev_review_012: {
    // secretlint's recommended preset: the maintained rule set for credentials (docs/sections/starter-agents.md).
    'secretlint.mjs':
      "export { lintSource } from '@secretlint/core'; export { creator as recommendedPreset } from '@secretlint/secretlint-rule-preset-recommend';",
    // ESLint's Linter without its file system, and sucrase, which strips TypeScript's types keeping every line where it was.
    'eslint.mjs': "export { Linter } from 'eslint/universal'; export { transform as stripTypes } from 'sucrase';",
    'openai.mjs': OPENAI,
  },
  agent_research_rag_015: { 'openai.mjs': OPENAI },
  agent_svc_skills_005: { 'openai.mjs': OPENAI },
  agent_sales_outreach_008: { 'openai.mjs': OPENAI, 'nodemailer.mjs': "export { default as nodemailer } from 'nodemailer';" },
};

export async function buildAgentVendor(root) {
  await Promise.all(
    Object.entries(AGENT_VENDOR).map(async ([agentId, modules]) => {
      const dir = new URL(`agents/${agentId}/vendor/`, root);
      await rm(dir, { recursive: true, force: true });
      await Promise.all(
        Object.entries(modules).map(([name, contents]) =>
          build({
            stdin: { contents, resolveDir: new URL('.', root).pathname, loader: 'js' },
            outfile: new URL(name, dir).pathname,
            bundle: true,
            format: 'esm',
            platform: 'node',
            target: 'node20',
            minify: true,
            legalComments: 'eof',
            banner: {
              js: "import { createRequire as __vendorRequire } from 'node:module'; const require = __vendorRequire(import.meta.url);",
            },
            logLevel: 'warning',
          }),
        ),
      );
    }),
  );
}
