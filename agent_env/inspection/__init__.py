"""What the `agent-env` commands show: tool listings, renderings, the fidelity matrix, baseline rollouts, plots."""
