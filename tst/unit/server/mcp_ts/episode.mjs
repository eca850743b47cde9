// One episode of a served environment over plain MCP with the official TypeScript SDK, as a third-party client
// would play it: list the tools, call them (the calls come as JSON on stdin), then start again in a new session.
// Usage: node episode.mjs <endpoint URL> < calls.json; prints what it saw as one JSON object on stdout.
// Every call's outcome is recorded: a result, or the error the SDK threw (which the test then fails on).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [endpoint] = process.argv.slice(2);
const calls = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

async function connect() {
  const client = new Client({ name: "agent-env-typescript-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint));
  await client.connect(transport);
  return { client, transport };
}

async function call(client, name, args) {
  try {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError === true, text: result.content.map((c) => c.text).join(""), meta: result._meta ?? {} };
  } catch (error) {
    return { thrown: `${error.constructor.name}: ${error.message}` };
  }
}

const seen = { calls: [] };
const first = await connect();
const listed = await first.client.listTools();
seen.tools = listed.tools.map((tool) => ({ name: tool.name, inputSchema: JSON.stringify(tool.inputSchema) }));
for (const [name, args] of calls) {
  seen.calls.push(await call(first.client, name, args));
}
await first.transport.terminateSession();
await first.client.close();

const again = await connect(); // starting again: a new session is a new episode
seen.again = await call(again.client, "battery_status", {});
await again.transport.terminateSession();
await again.client.close();
process.stdout.write(JSON.stringify(seen));
