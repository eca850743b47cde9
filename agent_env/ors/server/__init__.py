"""The Open Reward Standard's side of an agent_env server: its routes at the server's root, over the server's
episodes, under the server's guard, plugged into `build_app` as a `Surface`."""

from agent_env.ors.server._surface import ORSSurface

__all__ = ["ORSSurface"]
