"""`bench/batch_episodes.py` at a smaller size: a batch of episodes at once on one `agent-env serve`, from client
processes whose rollout threads share one provider each, every answer the one a `LocalSession` gives."""

from __future__ import annotations

from bench.batch_episodes import run_batch, serving


def test_a_batch_of_episodes_at_once_loses_none_and_answers_each_as_in_process():
    with serving("toy", 1, max_episodes=256) as (url, servers):
        batch = run_batch(url, "toy", 192, servers, processes=2)
        assert servers[0].is_running()
    assert (batch.lost, batch.wrong) == ([], [])
    assert batch.episodes == 192 and batch.open_seconds <= batch.seconds
