"""OpenEnv's side of an agent_env server: its wire surface (`/ws`, its `POST /mcp` dialect, `/health`, `/schema`,
`/metadata`) over the server's episodes, under the server's guard."""
