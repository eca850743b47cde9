"""What a spawned child process does with a pickled factory or provider (importable by the child, as spawn needs)."""

from __future__ import annotations

from typing import Any


def play_an_episode(factory: Any) -> list[Any]:
    """Play a whole episode through the factory, as a TRL rollout worker would."""
    environment = factory()
    played = [
        environment.reset(seed=2),
        environment.add(amount=3),
        environment.where(),
        environment.where(),
        environment.get_reward(),
    ]
    environment._session.close()
    return played


def continue_an_episode(provider: Any, episode_id: str) -> list[Any]:
    """Route calls to an episode another process opened, from its id alone."""
    session = provider.attach(episode_id)
    return [session.call_tool("add", {"amount": 10}), session.call_tool("where", {})]
