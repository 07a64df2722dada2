// The agent's workflow through the MCP TypeScript SDK's streamable-HTTP client, against
// `chronos serve`: node workflow.mjs <url> <token> <branch>; prints what it saw as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, branch] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "chronos-ts-test", version: "1.0.0" });
await client.connect(transport);
const text = (result) => ({ error: result.isError === true, text: result.content[0].text });
const call = async (name, args) => text(await client.callTool({ name, arguments: args }));
const seen = {
  protocol: transport.protocolVersion ?? null,
  server: client.getServerVersion(),
  tools: (await client.listTools()).tools.map((tool) => tool.name),
  describe: await call("describe", { table: "users" }),
  fork: await call("fork", { name: branch }),
  sql: await call("sql", { sql: "update users set name = 'Ada L.' where id = 1", branch }),
  diff: await call("diff", { branch }),
  merge: await call("merge", { branch }),
  main: await call("sql", { sql: "select name from users where id = 1" }),
};
await client.close();
console.log(JSON.stringify(seen));
