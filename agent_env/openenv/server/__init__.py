"""OpenEnv's side of an agent_env server: its wire surface (`/ws`, its `POST /mcp` dialect, `/health`, `/schema`,
`/metadata`) over the server's episodes, under the server's guard, plugged into `build_app` as a `Surface`."""

from agent_env.openenv.server._surface import OPENENV_PREFIX, OpenEnvSurface

__all__ = ["OPENENV_PREFIX", "OpenEnvSurface"]
