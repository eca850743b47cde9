"""`python -m agent_env.cli`: the `agent-env` command, as the tests start it in a process of its own."""

from agent_env.cli import main

main()
