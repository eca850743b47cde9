"""The desk through the TRL factory's SchemaTools: every tool, valid and invalid calls, the rendered prompt."""

import copy
import json

import pytest

from agent_env import AgentEnv, EpisodeEndedError, ToolArgumentError, ToolError, UnscoredEpisodeError
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.session import LocalSession
from agent_env.training import SchemaTool
from agent_env.training._render_check import discovered_tools, expected_rendering, render_tools, tojson

TASK = "desk-v4/test/0000"
CURVES = [
    {"hours": "HE02-HE04", "points": [[-60, 25], [0, 26]]},
    {"hours": [18, 19], "points": [[0, 60], [60, 61]]},
]
AS_OFFERS = [{"product": "regup", "hours": "HE10", "mw": 10, "price": 2}]


@pytest.fixture(scope="module")
def env():
    return AgentEnv.local("gridsim-desk")


@pytest.fixture
def desk(env):
    desk = env.factory()
    desk.reset(task_id=TASK, prompt=[])
    return desk


def book(desk):
    inner = desk._session.environment
    return copy.deepcopy((inner.curves, inner.as_offers))


def test_the_desk_publishes_eleven_tools_and_end_turn():
    assert list(GridSimDesk.tools) == [
        "desk_brief",
        "battery_status",
        "dam_price_forecast",
        "as_price_forecast",
        "system_conditions",
        "price_history",
        "as_product_rules",
        "check_offers",
        "submit_dam_offers",
        "list_offers",
        "withdraw_offers",
        "end_turn",
    ]


def test_submit_publishes_the_nested_offer_schema():
    schema = GridSimDesk.tools["submit_dam_offers"].input_schema
    curve = schema["properties"]["curves"]["items"]
    offer = schema["properties"]["as_offers"]["items"]
    assert curve["required"] == ["hours", "points"]
    assert curve["properties"]["hours"]["anyOf"] == [
        {"type": "string"},
        {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 24}, "maxItems": 24},
    ]
    points = curve["properties"]["points"]
    assert (points["minItems"], points["maxItems"]) == (2, 10)
    assert points["items"] == {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "number"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert offer["properties"]["product"]["enum"] == ["regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]
    assert offer["properties"]["mw"] == {"type": "number", "minimum": 0}
    assert (
        schema["additionalProperties"]
        is curve["additionalProperties"]
        is offer["additionalProperties"]
        is False
    )
    assert GridSimDesk.tools["check_offers"].input_schema == schema


def test_every_array_argument_is_bounded_by_what_one_day_can_hold():
    # 24 hours: at most 24 curves (each hour takes one), 6 products x 24 hours of AS offers (one per product and
    # hour), and 24 distinct hours in an hour list.
    offers = GridSimDesk.tools["submit_dam_offers"].input_schema["properties"]
    assert (offers["curves"]["maxItems"], offers["as_offers"]["maxItems"]) == (24, 144)
    hour_list = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 24}, "maxItems": 24}
    assert offers["as_offers"]["items"]["properties"]["hours"]["anyOf"][1] == hour_list
    for name in ("dam_price_forecast", "as_price_forecast", "system_conditions", "withdraw_offers"):
        assert GridSimDesk.tools[name].input_schema["properties"]["hours"]["anyOf"][1] == hour_list, name
    unbounded = [
        (tool["name"], path)
        for tool in GridSimDesk.tools.published
        for path, node in _nodes(tool["inputSchema"])
        if node.get("type") == "array" and "maxItems" not in node
    ]
    assert unbounded == []


def _nodes(schema, path="$"):
    yield path, schema
    for key, value in schema.items():
        if isinstance(value, dict):
            yield from _nodes(value, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield from _nodes(item, f"{path}.{key}[{index}]")


def test_the_fullest_book_a_day_holds_is_valid_and_one_more_entry_is_refused_by_the_schema():
    points = [[-100, -250], [100, 5000]]
    products = ["regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]
    full = {
        "curves": [{"hours": [hour], "points": points} for hour in range(1, 25)],
        "as_offers": [
            {"product": p, "hours": [h], "mw": 1, "price": 1} for p in products for h in range(1, 25)
        ],
    }
    session = LocalSession(GridSimDesk())
    session.reset(task_id=TASK)
    assert json.loads(session.call_tool("check_offers", full))["valid"] is True
    full["curves"].append({"hours": "HE01", "points": points})
    with pytest.raises(ToolArgumentError, match=r"\n- curves: \[\{.* has more than 24 items$"):
        session.call_tool("check_offers", full)
    with pytest.raises(ToolArgumentError, match=r"\n- hours: \[7,7,7.*\] has more than 24 items$"):
        session.call_tool("dam_price_forecast", {"hours": [7] * 25})


def test_the_qwen3_prompt_shows_every_published_schema_end_turn_included(desk):
    prompt = render_tools(discovered_tools(desk), "qwen3")
    for published in GridSimDesk.tools.published:
        assert tojson(expected_rendering(published)) in prompt, published["name"]


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("desk_brief", {}, '"date"'),
        ("battery_status", {}, '"soc_start_mwh":100.0'),
        ("dam_price_forecast", {"hours": "HE07-HE08", "bands": True}, '"p90":{"HE07"'),
        ("as_price_forecast", {"product": "ecrs", "hours": [18]}, '{"ecrs":{"HE18"'),
        ("system_conditions", {"hours": "HE12"}, '"solar_mw":{"HE12"'),
        ("price_history", {"days": 2}, '"day_minus_1"'),
        ("as_product_rules", {}, '"nspin":{"direction":"up","duration_h":4.0'),
        ("check_offers", {"curves": CURVES, "as_offers": AS_OFFERS}, '"forecast_profit"'),
        ("list_offers", {}, '{"curves":[],"as_offers":[]}'),
        ("withdraw_offers", {"hours": "all"}, "Withdrew all offers in all."),
    ],
)
def test_every_read_tool_answers_through_its_schema_tool(desk, name, arguments, expected):
    tool = getattr(desk, name)
    assert isinstance(tool, SchemaTool)
    assert expected in tool(**arguments)


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("dam_price_forecast", {"hours": 7}, "hours: expected string or array; got integer 7"),
        ("as_price_forecast", {"product": "rrs"}, 'product: expected one of "regup"'),
        ("price_history", {"days": 9}, "days: 9 is greater than the maximum of 7"),
        ("withdraw_offers", {"product": "gas"}, 'product: expected one of "energy"'),
        ("system_conditions", {"hours": [0]}, "hours[0]: 0 is less than the minimum of 1"),
    ],
)
def test_read_tools_refuse_bad_arguments_naming_the_path(desk, name, arguments, expected):
    with pytest.raises(ToolArgumentError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        getattr(desk, name)(**arguments)


def test_submit_books_offers_and_list_shows_them(desk):
    assert desk.submit_dam_offers(curves=CURVES, as_offers=AS_OFFERS) == "Booked 2 curves and 1 AS offers."
    listed = json.loads(desk.list_offers())
    assert listed["curves"][0] == {"hours": "HE02-HE04", "points": [[-60, 25], [0, 26]]}
    assert listed["curves"][1]["hours"] == "HE18-HE19"
    assert listed["as_offers"] == [{"product": "regup", "hours": "HE10", "mw": 10, "price": 2}]


@pytest.mark.parametrize(
    ("curves", "as_offers", "error", "expected"),
    [
        (
            [{"hours": "HE07", "points": [[0, 1], [1, "x"]]}],
            [],
            ToolArgumentError,
            r"curves\[0\].points\[1\]\[1\]: expected number",
        ),
        ([{"hours": "HE07"}], [], ToolArgumentError, r"curves\[0\]: missing required property 'points'"),
        (
            [],
            [{"product": "reg", "hours": "HE07", "mw": 1, "price": 1}],
            ToolArgumentError,
            r"as_offers\[0\].product",
        ),
        (
            [],
            [{"product": "regup", "hours": "HE07", "mw": -1, "price": 1}],
            ToolArgumentError,
            r"as_offers\[0\].mw",
        ),
        (
            [{"hours": "HE07", "points": [[0, 5], [10, 1]]}],
            [],
            ToolError,
            r"curves\[0\].points: .*non-decreasing",
        ),
        ([{"hours": "HE7-HE99", "points": [[0, 5], [10, 6]]}], [], ToolError, r"HE7-HE99"),
        ([{"hours": "HE07", "points": [[0, 5], [500, 6]]}], [], ToolError, r"curves\[0\].points"),
        (
            [
                {"hours": "HE07-HE09", "points": [[0, 5], [10, 6]]},
                {"hours": [9], "points": [[0, 5], [10, 6]]},
            ],
            [],
            ToolError,
            r"curves\[1\]",
        ),
        (
            [{"hours": "HE03", "points": [[0, 5], [10, 6]]}],
            [],
            ToolError,
            r"HE03 already have a curve in the book",
        ),
    ],
)
def test_invalid_submissions_name_the_entry_and_leave_the_book_unchanged(
    desk, curves, as_offers, error, expected
):
    desk.submit_dam_offers(curves=CURVES[:1])
    before = book(desk)
    with pytest.raises(error, match=expected):
        desk.submit_dam_offers(curves=curves, as_offers=as_offers)
    with pytest.raises(error, match=expected):
        desk.check_offers(curves=curves, as_offers=as_offers)
    assert book(desk) == before


def test_withdraw_removes_only_what_it_names(desk):
    desk.submit_dam_offers(curves=CURVES, as_offers=AS_OFFERS)
    assert desk.withdraw_offers(hours="HE03", product="energy") == "Withdrew energy in HE03."
    listed = json.loads(desk.list_offers())
    assert [c["hours"] for c in listed["curves"]] == [[2, 4], "HE18-HE19"]
    assert len(listed["as_offers"]) == 1
    desk.withdraw_offers(product="regup")
    assert json.loads(desk.list_offers())["as_offers"] == []


def test_end_turn_settles_scores_and_closes_the_episode(desk):
    desk.submit_dam_offers(curves=CURVES)
    report = desk.end_turn()
    assert report.startswith("Day settled. Profit $") and "reward" in report
    reward = desk.get_reward()
    assert 0.0 <= reward <= 1.0
    assert reward == desk._session.environment.score.reward
    with pytest.raises(EpisodeEndedError):
        desk.list_offers()


def test_doing_nothing_scores_zero_profit(desk):
    desk.end_turn()
    assert desk._session.environment.score.profit == pytest.approx(0.0)


def test_reset_takes_a_seed_and_refuses_a_bad_task(env):
    session = env.open()
    assert "battery" in session.reset(seed=11)
    with pytest.raises(
        UnscoredEpisodeError, match=r"its reset raised BundleError: unknown task id '\.\./\.\./etc/passwd'"
    ):
        session.reset(task_id="../../etc/passwd")


def test_the_dataset_rows_reset_the_desk(env):
    rows = env.provider.dataset_rows("test")
    assert len(rows) >= 64 and rows[0]["task_id"] == TASK
    session = env.open()
    assert session.reset(**rows[5]).startswith("You are the day-ahead trader")


def test_the_observation_trl_appends_to_the_prompt_starts_a_new_paragraph(env):
    row = env.provider.dataset_rows("train")[0]
    observation = env.open().reset(**row)
    first_turn = row["prompt"][-1]["content"] + observation  # what TRL does with reset's return value
    assert "scored on profit.\n\nYou are the day-ahead trader" in first_turn
