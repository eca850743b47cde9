"""τ²-bench (Sierra's tau2-bench) built in: its airline, retail, telecom and mock domains as environments, with a
simulated user (in telecom, one who works a phone of its own), the reward as its evaluator computes it, and its data
fetched at run time from a pinned commit (`data`).

`AgentEnv.local("tau2-airline")` (or `tau2-retail`, `tau2-telecom`, `tau2-telecom-workflow`, their `-solo` forms,
`tau2-mock`) loads one by name wherever the desk loads: the CLI, `serve`, Ray, OpenEnv and `eval`. See docs/tau2.md
for what matches upstream, what differs and why.
"""

from agent_env.envs.tau2.data import COMMIT, Tau2DataError, domain_folder
from agent_env.envs.tau2.environment import Tau2Environment, UserSide, tool_text
from agent_env.envs.tau2.judge import Judge
from agent_env.envs.tau2.prompts import Prompts, load_prompts
from agent_env.envs.tau2.store import Store, Table

__all__ = [
    "COMMIT",
    "Judge",
    "Prompts",
    "Store",
    "Table",
    "Tau2DataError",
    "Tau2Environment",
    "UserSide",
    "domain_folder",
    "load_prompts",
    "tool_text",
]
