"""τ²-bench's mock domain: a small task list for one user, with a notification inbox on the user's side. Its ten
tasks exercise every part of the reward (DB, ENV_ASSERTION, ACTION, COMMUNICATE, NL_ASSERTION), the initial states
(data, actions, a conversation before the task) and the user's own tools, in a database of a few hundred bytes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agent_env.envs.tau2.environment import Tau2Environment, UserSide, tool_text
from agent_env.envs.tau2.store import Store, Table
from agent_env.errors import ToolError
from agent_env.tools import tool

TaskStatus = Literal["pending", "completed"]


class TaskItem(BaseModel):
    task_id: str = Field(description="The task's id, such as 'task_1'")
    title: str = Field(description="The task's title")
    description: str | None = Field(None, description="What the task is about, when it says")
    status: TaskStatus = Field(description="'pending' until done, then 'completed'")


class Member(BaseModel):
    user_id: str = Field(description="The user's id, such as 'user_1'")
    name: str = Field(description="The user's name")
    tasks: list[str] = Field(description="The ids of the tasks assigned to the user")


class MockDB(BaseModel):
    tasks: dict[str, TaskItem]
    users: dict[str, Member]


class MockStore(Store):
    tasks: Table[TaskItem]
    users: Table[Member]


class Notification(BaseModel):
    notification_id: str = Field(description="The notification's id, such as 'notif_1'")
    message: str = Field(description="What the notification says")
    status: Literal["unread", "read"] = Field("unread", description="'unread' until dismissed")
    task_id: str | None = Field(None, description="The task it is about, if any")


class InboxDB(BaseModel):
    notifications: dict[str, Notification] = Field(default_factory=dict)


class InboxStore(Store):
    notifications: Table[Notification]


class Inbox(UserSide):
    """The user's notification inbox: its tools (for the simulated user) and the helpers tasks call."""

    db: InboxStore

    @tool
    def check_notifications(self) -> str:
        """List every notification in your inbox."""
        return tool_text(list(self.db.notifications.values()))

    @tool
    def dismiss_notification(self, notification_id: str) -> str:
        """Dismiss a notification: mark it as read.

        Args:
            notification_id: The notification's id, such as 'notif_1'.
        """
        if notification_id not in self.db.notifications:
            raise ToolError(f"Notification {notification_id} not found")
        self.db.notifications.edit(notification_id).status = "read"
        return f"Notification {notification_id} dismissed"

    def add_notification(
        self, notification_id: str, message: str, task_id: str | None = None
    ) -> Notification:
        """Put a notification in the inbox (tasks' initialization actions call this)."""
        notification = Notification(
            notification_id=notification_id, message=message, status="unread", task_id=task_id
        )
        self.db.notifications.insert(notification_id, notification)
        return notification

    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        """Whether a notification has the status (tasks' assertions call this)."""
        if notification_id not in self.db.notifications:
            raise ToolError(f"Notification {notification_id} not found")
        return self.db.notifications[notification_id].status == expected_status


class Tau2Mock(Tau2Environment):
    """τ²-bench's mock domain: create tasks for users and mark them completed, under a five-line policy."""

    domain = "mock"
    base_model = MockDB
    store = MockStore
    user_side = Inbox
    user_base_model = InboxDB
    db: MockStore

    @tool
    def create_task(
        self,
        user_id: str,
        title: str,
        description: Annotated[str | None, Field(description="What the task is about (optional)")] = None,
    ) -> str:
        """Create a task for a user; it starts pending.

        Args:
            user_id: The id of the user the task is for, such as 'user_1'.
            title: The task's title.
        """
        if user_id not in self.db.users:
            raise ToolError(f"User {user_id} not found")
        task_id = f"task_{len(self.db.tasks) + 1}"
        task = TaskItem(task_id=task_id, title=title, description=description, status="pending")
        self.db.tasks.insert(task_id, task)
        self.db.users.edit(user_id).tasks.append(task_id)
        return tool_text(task)

    @tool
    def get_users(self) -> str:
        """List every user, with the ids of their tasks."""
        return tool_text(list(self.db.users.values()))

    @tool
    def update_task_status(self, task_id: str, status: TaskStatus) -> str:
        """Set a task's status.

        Args:
            task_id: The task's id, such as 'task_1'.
            status: The new status: 'pending' or 'completed'.
        """
        if task_id not in self.db.tasks:
            raise ToolError(f"Task {task_id} not found")
        task = self.db.tasks.edit(task_id)
        task.status = status
        return tool_text(task)

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the user over to a human agent, with a summary of their issue. Do this only when the user asks for a human agent, or when the policy and your tools cannot resolve their issue; then tell the user.

        Args:
            summary: The user's issue, summed up for the human agent.
        """
        return "Transfer successful"

    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        """Whether a user has that many tasks (tasks' assertions call this)."""
        if user_id not in self.db.users:
            raise ToolError(f"User {user_id} not found")
        return len(self.db.users[user_id].tasks) == expected_number

    def assert_task_status(self, task_id: str, expected_status: TaskStatus) -> bool:
        """Whether a task has the status (tasks' assertions call this)."""
        if task_id not in self.db.tasks:
            raise ToolError(f"Task {task_id} not found")
        return self.db.tasks[task_id].status == expected_status
