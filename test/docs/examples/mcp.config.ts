// `npx durable-agents serve --config mcp.config.ts`: MCP servers the reference agent takes tools
// from. An agent spawned with "mcp": ["files"] is offered files__read_text_file, files__write_file, …
import { defineConfig } from '../../../src/index.js';

const root = process.env.FILES_ROOT ?? './data/files';

export default defineConfig({
  mcpServers: {
    // A program speaking MCP on stdio: started when an agent first needs it, restarted if it dies.
    // Its tools marked destructiveHint (write_file, move_file, …) wait for tool.approve.
    files: { command: 'npx', args: ['mcp-server-filesystem', root] },
    // The reference server of the MCP project; here no call of it waits for a person.
    everything: { command: 'npx', args: ['mcp-server-everything', 'stdio'], approveDestructive: false, timeoutMs: 10_000 },
    // A streamable HTTP server, with the headers each request carries.
    search: { url: 'http://127.0.0.1:3001/mcp', headers: { 'x-team': 'docs' } },
  },
});
