"""Dataset rows by reference (`_row_references.py`, the control API's `?row=`, `RemoteProvider.reset_request`): a
row the server served is named by its digest, not sent back, so a row past the body limit still starts an episode;
any other row too large is refused naming it and the option to raise."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from agent_env import AgentEnv, Environment
from agent_env.server import RemoteProvider, RequestTooLargeError
from agent_env.server._row_references import row_digest
from agent_env.server.app import build_app

from .running import running

LIMIT = 64 * 1024
"""The servers' body limit here: every row of `Bulky` is larger."""


class Bulky(Environment):
    """Rows that carry a context of 200 kB each (8 MB in the issue); reset says what it got, and changes its row."""

    def reset(self, task_id: str, context: str, prompt: list[dict[str, Any]], **row: Any) -> str:
        prompt.append({"role": "user", "content": "changed by reset"})  # must not reach the server's own copy
        return f"{task_id}: {len(context)} characters of context, {len(prompt)} messages, extra keys {sorted(row)}"

    def reward(self) -> float:
        return 0.0

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [
            {
                "prompt": [{"role": "user", "content": "Read."}],
                "task_id": f"{split}-{i}",
                "context": "x" * 200_000,
            }
            for i in range(2)
        ]


@pytest.fixture(scope="module")
def served() -> Any:
    app = build_app(Bulky, max_body_bytes=LIMIT)
    with running(app) as url:
        yield url


def test_a_reset_from_a_row_the_server_served_names_it_instead_of_sending_it(served):
    url = served
    env = AgentEnv.connect(url)
    rows = list(env.dataset("train"))  # through a datasets.Dataset, as TRL hands rows to reset
    with env.open() as session:
        assert session.reset(**rows[1]) == "train-1: 200000 characters of context, 2 messages, extra keys []"
        assert session.reset(**rows[1]) == "train-1: 200000 characters of context, 2 messages, extra keys []"


def test_a_provider_that_read_no_dataset_names_a_large_row_on_a_guess(served):
    url = served
    reader = RemoteProvider(url)
    row = reader.dataset_rows("train")[0]
    fresh = pickle.loads(pickle.dumps(reader))  # as AsyncGRPO's rollout worker gets it: no rows read
    assert fresh._served == {}
    assert fresh.open().reset(**row).startswith("train-0: 200000 characters")


def test_a_restarted_server_reads_the_split_a_reference_names_again():
    provider = None
    for _ in range(2):
        with running(build_app(Bulky, max_body_bytes=LIMIT), port=provider_port(provider)) as url:
            if provider is None:
                provider = RemoteProvider(url)
                row = provider.dataset_rows("test")[1]
                continue
            assert provider.open().reset(**row).startswith("test-1: 200000 characters")


def provider_port(provider: RemoteProvider | None) -> int:
    return 0 if provider is None else int(provider.url.rsplit(":", 1)[1])


def test_a_large_row_the_server_did_not_serve_is_refused_naming_it_and_the_option(served):
    url = served
    row = {"prompt": [], "task_id": "mine-7", "context": "y" * 200_000}
    with pytest.raises(RequestTooLargeError) as raised:
        RemoteProvider(url).open().reset(**row)
    assert str(raised.value) == (
        "reset: the dataset row task_id='mine-7' (200,045 bytes of JSON) is too large for the server: the request "
        f"body is larger than the server's limit of {LIMIT} bytes. It is not a row the server served (GET "
        "/datasets/{split}) as it is, so it was sent whole: start the server with a larger --max-body-bytes, or "
        "reset from the server's own rows unchanged"
    )


def test_a_served_row_changed_since_is_sent_whole_as_changed(served):
    url = served
    provider = RemoteProvider(url)
    row = {**provider.dataset_rows("train")[0], "context": "short", "level": 2}
    assert (
        provider.open().reset(**row) == "train-0: 5 characters of context, 2 messages, extra keys ['level']"
    )


@pytest.mark.anyio
async def test_the_control_api_starts_from_a_served_row_by_digest_and_refuses_unknown_ones(control):
    client = await control()
    rows = (await client.get("/datasets/train")).json()["rows"]
    opened = await client.post(f"/episodes?row={row_digest(rows[2])}")
    assert opened.status_code == 201 and opened.json()["observation"] == "counter starts at 2"
    episode = opened.json()["episode_id"]
    again = await client.post(f"/episodes/{episode}/reset?row={row_digest(rows[1])}&split=train")
    assert again.json()["observation"] == "counter starts at 1"
    unknown = await client.post("/episodes?row=0123abcd")
    assert unknown.status_code == 404
    assert unknown.json()["error"] == {
        "code": "row_not_found",
        "message": "no row of this server's datasets has digest \"0123abcd\" (the served splits: 'train'): send "
        "the row itself",
    }
    both = await client.post(f"/episodes?row={row_digest(rows[2])}", json={"seed": 1})
    assert both.status_code == 400
    assert (
        "send the dataset row in the body, or name a row this server served with ?row=, not both" in both.text
    )
