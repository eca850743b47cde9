"""Tests of the GridSim desk simulator (agent_env.envs.gridsim)."""
