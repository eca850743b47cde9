"""`agent_env/envs/tau2/telecom.py`: τ²-bench's telecom domain. Its data and splits, the carrier's tools (each
expectation written from what tau2-bench's own tool does at the pinned commit; `bench/tau2_upstream.py` holds every
call to tau2-bench's code), the link between the carrier's database and the user's phone after every step, each
task's initial state, and the reward, gold and wrong, over the base split."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_env import AgentEnv, ToolArgumentError, ToolError
from agent_env.envs import load_environment
from agent_env.envs.tau2.scoring import DB_CHECK
from agent_env.envs.tau2.store import canonical
from agent_env.envs.tau2.tasks import Task, TaskFile, read_tasks
from agent_env.envs.tau2.telecom import Tau2Telecom, Tau2TelecomWorkflow, new_bill_id
from agent_env.session import LocalSession
from agent_env.tools import tool
from agent_env.users import ScriptedUser

ABROAD = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"
"""John Smith abroad, his phone's data roaming off (his line may roam): fixed by toggling roaming on the phone."""
PAYMENT = "[service_issue]overdue_bill_suspension[PERSONA:Easy]"
"""His line suspended for an overdue bill: fixed by a payment request, his payment, and resuming the line."""
LOCKED = "[service_issue]lock_sim_card_pin[PERSONA:Hard]"
"""His SIM locked by a PIN, which nothing fixes: the agent must transfer him."""


@pytest.fixture(scope="module")
def env() -> Tau2Telecom:
    return Tau2Telecom(user=ScriptedUser(["Hello."], then="OK."))


@pytest.fixture
def session(env: Tau2Telecom) -> Iterator[LocalSession]:
    opened = LocalSession(env)
    opened.reset(task_id=ABROAD)
    yield opened


def data(text: str) -> Any:
    return json.loads(text)


def phone(env: Tau2Telecom) -> Any:
    return env.user_db.device["user"]  # type: ignore[union-attr]


def around(env: Tau2Telecom) -> Any:
    return env.user_db.surroundings["user"]  # type: ignore[union-attr]


# The data.


def test_the_splits_are_upstreams_and_every_task_is_read_only_when_asked_for(env):
    assert {split: len(ids) for split, ids in env.data.splits.items()} == {
        "small": 20, "train": 74, "test": 40, "full": 2285, "base": 114,
    }  # fmt: skip
    assert set(env.data.splits["base"]) == set(env.data.splits["train"]) | set(env.data.splits["test"])
    assert isinstance(env.data.tasks, TaskFile) and len(env.data.tasks) == 2285
    assert env.data.tasks[ABROAD] is env.data.tasks[ABROAD]  # kept once read
    assert env.data.task(ABROAD).ticket.startswith("The user is experiencing issues with their mobile data")


def test_only_the_most_recently_read_tasks_are_kept_as_objects():
    raw = json.dumps([{"id": f"t{n}", "user_scenario": {"instructions": "Ask."}} for n in range(5)]).encode()
    tasks = read_tasks(raw)
    tasks.KEPT = 2
    first = tasks["t0"]
    tasks["t1"], tasks["t2"]
    assert tasks["t2"] is tasks["t2"] and tasks["t0"] is not first  # t0 was let go, and read again
    assert tasks["t0"] == first and list(tasks) == [f"t{n}" for n in range(5)] and "t4" in tasks


def test_a_task_file_that_is_not_tau2_benchs_fails_when_read_saying_where():
    with pytest.raises(ValueError, match=r"1\.id"):
        read_tasks(b'[{"id": "a", "user_scenario": {"instructions": "x"}}, {"id": 2}]')
    with pytest.raises(json.JSONDecodeError):
        read_tasks(b'[{"id": "a", "user_scenario": {"instructions": "x"}} {"id": "b"}]')
    with pytest.raises(json.JSONDecodeError):
        read_tasks(b'[{"id": "a", "user_scenario": {"instructions": "x"}}] trailing')


def test_each_policy_is_upstreams_two_files_framed_as_its_telecom_environment_frames_them(env):
    documents = env.data.documents
    manual = Tau2Telecom(user="scripted").policy()
    assert manual == (
        f"<main_policy>\n{documents['main_policy.md']}\n</main_policy>\n"
        f"<tech_support_policy>\n{documents['tech_support_manual.md']}\n</tech_support_policy>"
    )
    workflow = Tau2TelecomWorkflow().policy()
    assert (
        documents["tech_support_workflow.md"] in workflow
        and documents["tech_support_manual.md"] not in workflow
    )
    solo = load_environment("tau2-telecom-workflow-solo")().policy()
    assert documents["main_policy_solo.md"] in solo and documents["tech_support_workflow_solo.md"] in solo
    assert manual in Tau2Telecom().prompt(env.data.task(ABROAD), "hi")[0]["content"]


# The carrier's tools.


def test_customers_are_found_by_contact_number_line_number_id_and_name(session):
    found = data(session.call_tool("get_customer_by_phone", {"phone_number": "555-123-2001"}))  # a line's
    assert found["customer_id"] == "C1001" and found["created_at"] == "2025-01-15 10:30:00"
    assert (
        data(session.call_tool("get_customer_by_phone", {"phone_number": "555-123-1002"}))["customer_id"]
        == "C1002"
    )
    by_name = data(
        session.call_tool("get_customer_by_name", {"full_name": "JOHN SMITH", "dob": "1985-06-15"})
    )
    assert [customer["customer_id"] for customer in by_name] == ["C1001"]
    assert session.call_tool("get_customer_by_name", {"full_name": "John Smith", "dob": "1985-06-16"}) == "[]"
    with pytest.raises(ToolError, match=r"^Customer with phone number 555-000-0000 not found$"):
        session.call_tool("get_customer_by_phone", {"phone_number": "555-000-0000"})
    with pytest.raises(ToolError, match=r"^Customer with ID C9 not found$"):
        session.call_tool("get_customer_by_id", {"customer_id": "C9"})


def test_details_are_found_by_the_first_letter_of_an_id(session):
    assert data(session.call_tool("get_details_by_id", {"id": "P1002"}))["data_refueling_price_per_gb"] == 2.0
    assert (
        data(session.call_tool("get_details_by_id", {"id": "D1002"}))["activation_date"]
        == "2025-02-15 11:45:00"
    )
    assert data(session.call_tool("get_details_by_id", {"id": "B1006"}))["status"] == "Disputed"
    with pytest.raises(ToolError, match=r"^Unknown ID format or type: X1$"):
        session.call_tool("get_details_by_id", {"id": "X1"})
    with pytest.raises(ToolError, match=r"^Line with ID L9 not found$"):
        session.call_tool("get_details_by_id", {"id": "L9"})


def test_a_line_is_suspended_only_when_active_and_resumed_only_when_suspended(session):
    suspended = data(
        session.call_tool("suspend_line", {"customer_id": "C1001", "line_id": "L1001", "reason": "x"})
    )
    assert suspended["message"] == "Line suspended successfully. $5/month holding fee will apply."
    assert (
        suspended["line"]["status"] == "Suspended"
        and suspended["line"]["suspension_start_date"] == "2025-02-25"
    )
    with pytest.raises(ToolError, match=r"^Line must be active to suspend$"):
        session.call_tool("suspend_line", {"customer_id": "C1001", "line_id": "L1001", "reason": "x"})
    resumed = data(session.call_tool("resume_line", {"customer_id": "C1001", "line_id": "L1001"}))
    assert resumed["line"]["status"] == "Active" and resumed["line"]["suspension_start_date"] is None
    with pytest.raises(ToolError, match=r"^Line must be suspended to resume$"):
        session.call_tool("resume_line", {"customer_id": "C1001", "line_id": "L1001"})
    with pytest.raises(ToolError, match=r"^Line L1004 not found for customer C1001$"):
        session.call_tool("resume_line", {"customer_id": "C1001", "line_id": "L1004"})


def test_data_usage_reads_as_upstream_writes_it_numbers_as_text(session):
    usage = data(session.call_tool("get_data_usage", {"customer_id": "C1001", "line_id": "L1002"}))
    assert usage == {"line_id": "L1002", "data_used_gb": "8.7", "data_limit_gb": "15.0",
                     "data_refueling_gb": "0.0", "cycle_end_date": "2025-02-28"}  # fmt: skip


def test_a_refuel_echoes_the_amount_as_sent_and_charges_the_draft_bill(session, env):
    added = data(
        session.call_tool("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2})
    )
    assert added == {"message": "Successfully added 2 GB of data for line L1002 for $4.00",
                     "new_data_refueling_gb": "2.0", "charge": "4.0"}  # fmt: skip
    again = data(
        session.call_tool("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 0.5})
    )
    assert (
        again["message"].startswith("Successfully added 0.5 GB") and again["new_data_refueling_gb"] == "2.5"
    )
    draft = env.db.bills["B1003"]
    assert draft.total_due == 5.0
    assert [item.description for item in draft.line_items] == [
        "Data refueling: 2 GB at $2.0/GB", "Data refueling: 0.5 GB at $2.0/GB",
    ]  # fmt: skip
    with pytest.raises(ToolArgumentError, match="gb_amount"):  # upstream refuses it too ("must be positive")
        session.call_tool("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 0})


def test_a_refuel_for_a_customer_without_a_draft_bill_opens_one_for_next_month(session, env):
    session.call_tool("refuel_data", {"customer_id": "C1002", "line_id": "L1004", "gb_amount": 1.0})
    customer = env.db.customers["C1002"]
    bill_id = customer.bill_ids[-1]
    assert (
        bill_id == new_bill_id(env.data.base.customers["C1002"]) and len(bill_id) == 9
    )  # 'B' + 8 hex digits
    bill = env.db.bills[bill_id]
    assert (str(bill.period_start), str(bill.period_end), str(bill.due_date)) == (
        "2025-03-01", "2025-03-31", "2025-03-15",
    )  # fmt: skip
    assert bill.status == "Draft" and bill.total_due == 0.1 and bill.line_items[0].item_type == "Charge"


def test_bills_come_newest_first_and_a_payment_request_needs_none_awaiting(session):
    bills = data(session.call_tool("get_bills_for_customer", {"customer_id": "C1001"}))
    assert [bill["bill_id"] for bill in bills] == ["B1003", "B1002", "B1001"]
    assert len(data(session.call_tool("get_bills_for_customer", {"customer_id": "C1001", "limit": 1}))) == 1
    with pytest.raises(ToolError, match=r"^Bill B1004 not found for customer C1001$"):
        session.call_tool("send_payment_request", {"customer_id": "C1001", "bill_id": "B1004"})
    sent = session.call_tool("send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"})
    assert sent == "Payment request sent to the customer for bill B1002"
    with pytest.raises(ToolError, match=r"^A bill is already awaiting payment for this customer$"):
        session.call_tool("send_payment_request", {"customer_id": "C1001", "bill_id": "B1001"})


def test_roaming_says_when_it_was_already_as_asked(session):
    assert (
        session.call_tool("enable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
        == "Roaming was already enabled"
    )
    assert (
        session.call_tool("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
        == "Roaming disabled successfully"
    )
    assert (
        session.call_tool("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
        == "Roaming was already disabled"
    )
    assert (
        session.call_tool("enable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
        == "Roaming enabled successfully"
    )


def test_every_tool_publishes_a_full_schema(env):
    tools = {tool["name"]: tool for tool in env.tools.published}
    assert len(tools) == 15  # 13 of the carrier's, message_user and end_turn
    refuel = tools["refuel_data"]["inputSchema"]
    assert refuel["properties"]["gb_amount"] == {
        "type": "number", "description": "How much data to add, in GB, such as 2.0; more than 0", "exclusiveMinimum": 0,
    }  # fmt: skip
    assert (
        refuel["required"] == ["customer_id", "line_id", "gb_amount"]
        and refuel["additionalProperties"] is False
    )
    assert all(tool["description"] and all(p.get("description") for p in tool["inputSchema"]["properties"].values())
               for tool in tools.values())  # fmt: skip


# The link between the two sides (upstream's sync_tools), after every step.


def test_the_phone_finds_its_lines_roaming_after_the_agent_changes_it(session, env):
    assert around(env).roaming_allowed is True
    session.call_tool("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
    assert around(env).roaming_allowed is False  # brought over by the call's own step
    env.run_user_tool("toggle_roaming", {})
    assert env.run_user_tool("run_speed_test", {}) == "Speed test failed: No Connection."


def test_a_refuel_gives_the_phone_its_data_back(env):
    opened = LocalSession(env)
    opened.reset(task_id="[mobile_data_issue]data_usage_exceeded[PERSONA:Easy]")
    assert around(env).mobile_data_usage_exceeded is True  # 15.1 GB used of 15
    opened.call_tool("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0})
    assert around(env).mobile_data_usage_exceeded is False


def test_a_payment_request_reaches_the_phone_and_the_payment_marks_the_bill_paid(env):
    opened = LocalSession(env)
    opened.reset(task_id=PAYMENT)
    line = env.db.lines["L1002"]
    assert line.status == "Suspended" and around(env).line_active is False
    assert env.run_user_tool("check_payment_request", {}) == "No payment request has been made."
    opened.call_tool("send_payment_request", {"customer_id": "C1001", "bill_id": "B1234321"})
    assert (
        env.run_user_tool("check_payment_request", {})
        == "You have a payment request for bill B1234321 of 65.0 USD."
    )
    assert env.run_user_tool("make_payment", {}) == "Payment of 65.0 USD has been made for bill B1234321."
    assert env.db.bills["B1234321"].status == "Paid" and around(env).payment_request is None
    opened.call_tool("resume_line", {"customer_id": "C1001", "line_id": "L1002"})
    assert around(env).line_active is True and phone(env).network_connection_status == "no_service"
    env.run_user_tool("reboot_device", {})  # the phone finds the network only when it searches again
    assert phone(env).network_connection_status == "connected"
    assert env.run_user_tool("make_payment", {}) == "You do not have a payment request."


class FailingAfterChange(Tau2Telecom):
    """telecom with one tool more, for this test only (none of upstream's fails once it has changed anything): it
    suspends a line, links the two sides (the phone learns its line is inactive), then fails."""

    @tool
    def suspend_then_fail(self, customer_id: str, line_id: str) -> str:
        """Suspend a line, then fail.

        Args:
            customer_id: The customer.
            line_id: Their line.
        """
        self.db.lines.edit(line_id).status = "Suspended"
        self.sync()
        raise ToolError("refused after the change")


def test_a_failed_call_changes_nothing_on_either_side_what_the_link_brought_over_included():
    env = FailingAfterChange(user=ScriptedUser(["Hello."], then="OK."))
    session = LocalSession(env)
    session.reset(task_id=ABROAD)
    before = {side: dumps(store) for side, store in (("db", env.db), ("user_db", env.user_db))}
    with pytest.raises(ToolError, match="refused after the change"):
        session.call_tool("suspend_then_fail", {"customer_id": "C1001", "line_id": "L1002"})
    assert env.db.lines["L1002"].status == "Active" and around(env).line_active is True
    assert {side: dumps(store) for side, store in (("db", env.db), ("user_db", env.user_db))} == before
    assert (
        env.errors == 1 and env.steps == 3
    )  # counted as upstream counts a failed call: a message, an answer
    session.call_tool("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
    assert around(env).roaming_allowed is False  # the next call's own link, after it succeeded


def dumps(store: Any) -> dict[str, dict[str, str]]:
    return {
        name: {key: canonical(table[key]) for key in table.changed()} for name, table in store.tables.items()
    }


# Each task's initial state.


def test_each_task_starts_from_its_initialization_actions_on_both_sides(env):
    LocalSession(env).reset(task_id=ABROAD)
    assert (around(env).name, around(env).phone_number, around(env).is_abroad) == (
        "John Smith",
        "555-123-2002",
        True,
    )
    assert phone(env).roaming_enabled is False and env.db.lines["L1002"].roaming_enabled is True
    LocalSession(env).reset(task_id="[service_issue]airplane_mode_on|unseat_sim_card[PERSONA:None]")
    assert phone(env).airplane_mode is True and phone(env).sim_card_missing is True
    assert around(env).is_abroad is False  # nothing of the last episode is left
    assert env.run_user_tool("check_sim_status", {}) == "No SIM card detected in the phone."
    LocalSession(env).reset(task_id=PAYMENT)
    bill = env.db.bills["B1234321"]
    assert (bill.status, bill.total_due, str(bill.period_start)) == ("Overdue", 65.0, "2025-01-01")
    assert "B1234321" in env.db.customers["C1001"].bill_ids


def test_the_shared_base_is_never_changed_by_an_episode(env):
    base = env.data.base
    LocalSession(env).reset(task_id=PAYMENT)
    assert base.lines["L1002"].status == "Active" and "B1234321" not in base.bills
    assert env.data.user_base.device["user"].airplane_mode is False


# The reward.


def gold(env: Tau2Telecom, session: LocalSession, task: Task, skip: int | None = None) -> None:
    """Play the task's reference actions (but the `skip`-th): the agent's through the session, the user's on the
    user's side; then the agent ends the episode."""
    for index, action in enumerate(task.evaluation_criteria.actions or []):
        if index == skip:
            continue
        if action.requestor == "user":
            env.run_user_tool(action.name, action.arguments)
        else:
            session.call_tool(action.name, action.arguments)
    if session.ended() is None:  # a transfer may have ended it
        session.call_tool("end_turn", {})


def test_over_the_base_split_gold_play_scores_1_and_no_play_scores_0(env):
    tasks = env.data.split("base")
    for task in tasks:
        session = LocalSession(env)
        session.reset(task_id=task.id)
        gold(env, session, task)
        score = session.score()
        assert score.reward == 1.0, (task.id, score.breakdown)
        assert set(score.breakdown["parts"]) == set(task.evaluation_criteria.reward_basis)
        session.reset(task_id=task.id)
        session.call_tool("end_turn", {})
        assert session.score().reward == 0.0, task.id


def test_a_task_that_cannot_be_fixed_needs_the_transfer_and_its_breakdown_says_so(env):
    session = LocalSession(env)
    session.reset(task_id=LOCKED)
    session.call_tool("end_turn", {})
    breakdown = session.score().breakdown
    assert breakdown["basis"] == ["ENV_ASSERTION", "ACTION"] and breakdown["reward"] == 0.0
    assert breakdown["parts"]["ENV_ASSERTION"]["reward"] == 1.0  # the phone has no service either way
    assert breakdown["parts"]["ACTION"] == {
        "reward": 0.0, "why": "no call matches the reference action(s) ['transfer_to_human_agents']",
    }  # fmt: skip


def test_a_users_fix_left_undone_fails_its_assertion_and_the_db_check_is_listed_computed_but_not_counted(env):
    task = env.data.task(ABROAD)
    session = LocalSession(env)
    session.reset(task_id=task.id)
    gold(env, session, task, skip=0)  # the user never switches roaming on
    breakdown = session.score().breakdown
    assert breakdown["reward"] == 0.0
    assert (
        "assert_mobile_data_status({'expected_status': True}) is not True"
        in breakdown["parts"]["ENV_ASSERTION"]["why"]
    )
    assert "DB" not in breakdown["parts"]  # its reward basis has none, as upstream's telecom tasks
    [db] = [check for check in breakdown["checks"] if check["part"] == "DB"]
    assert db == {"part": "DB", "check": DB_CHECK, "met": False, "basis": False}  # computed, not counted
    counted = [check for check in breakdown["checks"] if check["basis"]]
    assert {check["part"] for check in counted} == {"ENV_ASSERTION"}
    assert (
        len(counted) == 2 and breakdown["checks_reward"] == 0.0
    )  # both assertions unmet; the DB never counts
    checks = Tau2Telecom(reward="checks")  # the training reward: the fraction of counted checks met
    session = LocalSession(checks)
    session.reset(task_id=task.id)
    gold(checks, session, task)
    assert session.score().reward == 1.0
    db_basis = [check["basis"] for check in checks.reward_breakdown()["checks"] if check["part"] == "DB"]
    assert db_basis == [False]


def test_the_uncounted_db_check_is_upstreams_whose_gold_replay_never_links_the_two_sides(env):
    # Upstream's gold environment makes the reference calls without linking the sides (make_tool_call): after a
    # refuel, its phone still reads the data as used up, where the episode's phone, linked, does not. The DB check
    # is unmet there whatever the agent does, and so here; a fix on the phone alone meets it.
    met = {}
    for task_id in (ABROAD, "[mobile_data_issue]data_usage_exceeded[PERSONA:Easy]"):
        task = env.data.task(task_id)
        session = LocalSession(env)
        session.reset(task_id=task_id)
        gold(env, session, task)
        breakdown = session.score().breakdown
        assert breakdown["reward"] == 1.0
        [met[task_id]] = [check["met"] for check in breakdown["checks"] if check["part"] == "DB"]
    assert met == {ABROAD: True, "[mobile_data_issue]data_usage_exceeded[PERSONA:Easy]": False}


def test_telecom_loads_by_name_wherever_tau2_domains_load():
    for name, kind in (("tau2-telecom", "Tau2Telecom"), ("tau2-telecom-workflow", "Tau2TelecomWorkflow"),
                       ("tau2-telecom-solo", "Tau2TelecomSolo"),
                       ("tau2-telecom-workflow-solo", "Tau2TelecomWorkflowSolo")):  # fmt: skip
        assert load_environment(name).__name__ == kind
    rows = AgentEnv.local("tau2-telecom").provider.dataset_rows("base")
    assert len(rows) == 114 and rows[0]["prompt"][-1]["content"].startswith(
        "I am unable to send MMS messages"
    )


def test_initialization_data_for_the_user_merges_into_its_phone_and_for_the_carrier_is_refused(env):
    from agent_env.envs.tau2.telecom_db import TelecomStore
    from agent_env.envs.tau2.telecom_device import TelecomUserStore

    users = TelecomUserStore(env.data.user_base)
    users.update(
        {"device": {"airplane_mode": True, "app_statuses": {"messaging": {"permissions": {"sms": False}}}}}
    )
    merged = users.device["user"]
    assert merged.airplane_mode and not merged.app_statuses["messaging"].permissions.sms
    assert merged.app_statuses["messaging"].permissions.storage  # merged key by key, as upstream merges it
    with pytest.raises(ValueError, match="initialization data for the agent \\(lines\\) is not supported"):
        TelecomStore(env.data.base).update({"lines": []})
