"""The README's first command (`make demo`, i.e. `python -m agent_env.demo`) runs end to end."""

import subprocess
import sys


def test_the_demo_builds_the_factory_shows_the_error_and_scores_an_episode():
    result = subprocess.run(
        [sys.executable, "-m", "agent_env.demo"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "render check passed" in out
    assert '"prefixItems"' in out  # the full schema is shown
    assert '- curves[0].points[1][0]: expected number; got string "60"' in out
    assert "Day settled. Profit $" in out
    assert "Reward reaching the trainer (get_reward): " in out
